"""Data-parallel training of the tile-op transformer with DDP (NCCL).

    NCCL_NVLS_ENABLE=0 torchrun --nproc-per-node=2 examples/ddp_train.py [--steps 50]

Every rank builds the model from the same seed and trains on its half of each
global batch. Before training, every rank checks that DDP's averaged gradients
equal those of a single-process reference (the same model on the whole global
batch); it exits non-zero otherwise. Ranks share one torch_tile cache
directory (``$TORCH_TILE_CACHE_DIR``): one rank compiles each variant, the
other loads it. Needs one GPU per rank.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_tile as tt  # noqa: E402
from train_tiny_transformer import Config, TinyTransformer, ops_of, progression_batch  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    cfg = Config()
    ops = ops_of(torch.ops.tile)
    torch.manual_seed(0)
    model = TinyTransformer(cfg).to(device)
    reference = copy.deepcopy(model)
    ddp = DistributedDataParallel(model, device_ids=[local])
    data = torch.Generator(device=device).manual_seed(1)  # same global batches on every rank

    def global_batch():
        return torch.cat([progression_batch(cfg, data, device) for _ in range(world)])

    # Gradients: DDP (mean of per-rank means) == one process on the whole batch.
    tokens = global_batch()
    ddp(tokens[rank * cfg.batch:(rank + 1) * cfg.batch], ops).backward()
    reference.loss(tokens, ops).backward()
    worst = max((p.grad - q.grad).abs().max().item() / (q.grad.abs().max().item() + 1e-12)
                for p, q in zip(model.parameters(), reference.parameters()))
    ok = worst < 1e-4
    opt = torch.optim.AdamW(ddp.parameters(), lr=cfg.lr)
    opt.zero_grad(set_to_none=True)
    losses = []
    for _ in range(args.steps):
        tokens = global_batch()
        loss = ddp(tokens[rank * cfg.batch:(rank + 1) * cfg.batch], ops)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    report = {"rank": rank, "world": world, "grad_max_rel_diff_vs_single_process": worst, "grads_match": ok,
              "loss_first_last": [losses[0], losses[-1]] if losses else None, "compiles": tt.compile_count()}
    print(json.dumps(report), flush=True)
    dist.barrier()  # every rank tears the group down together: gloo can abort a rank that leaves first
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
