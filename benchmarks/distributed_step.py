"""Training step time of a small decoder over several processes, fully sharded (FSDP2) and tensor/sequence
parallel (DTensor), with its norms and activations as tile ops against torch eager (and Liger-Kernel's Functions
applied directly, under FSDP2, where liger-kernel is installed).

    torchrun --nproc-per-node=2 benchmarks/distributed_step.py [--steps N] [--out DIR] [--device cuda|cpu]

Rows (rank 0; median ms per step after warm-up, one step of each model in turn): per parallel plan, tile ops,
torch eager, Liger. Also per rank: variants compiled (``runtime_counters()["compiles"]``: with a shared
TORCH_TILE_CACHE_DIR, the ranks after the first to need a variant load it), and per tile step the host entries
(calls from C++ into Python) and fallback calls. ``--device cpu`` (gloo, Triton's interpreter) is a smoke run of
the same code. Writes distributed_step.json and distributed_step.png to --out.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import torch_tile as tt
from torch_tile import kernels as K

DIM, HIDDEN, LAYERS = 256, 1024, 4


class _RMSNorm(nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.weight, self.norm = nn.Parameter(torch.ones(DIM)), norm

    def forward(self, x):
        return self.norm(x, self.weight)


class _Block(nn.Module):
    def __init__(self, norm, act):
        super().__init__()
        self.norm, self.act = _RMSNorm(norm), act
        self.gate, self.up = nn.Linear(DIM, HIDDEN, bias=False), nn.Linear(DIM, HIDDEN, bias=False)
        self.down = nn.Linear(HIDDEN, DIM, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(self.act(self.gate(h), self.up(h)))


def _ops(kind: str):
    """(norm, activation) of a model kind."""
    if kind == "tile ops":
        return (lambda x, w: torch.ops.tile.rms_norm(x, w)[0]), torch.ops.tile.swiglu
    if kind == "torch eager":
        return (lambda x, w: F.rms_norm(x, (DIM,), w, 1e-6)), (lambda g, u: F.silu(g) * u)
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    return (lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6)), LigerSiLUMulFunction.apply


def _model(kind: str, device: torch.device) -> nn.Module:
    torch.manual_seed(0)
    norm, act = _ops(kind)
    return nn.Sequential(*[_Block(norm, act) for _ in range(LAYERS)]).to(device)


def _parallelized(model: nn.Module, plan: str, mesh) -> nn.Module:
    if plan == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for block in model:
            fully_shard(block, mesh=mesh)
        return fully_shard(model, mesh=mesh)
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)

    for block in model:
        parallelize_module(block, mesh, {
            "norm": SequenceParallel(sequence_dim=0), "gate": ColwiseParallel(input_layouts=Shard(0)),
            "up": ColwiseParallel(input_layouts=Shard(0)),
            "down": RowwiseParallel(output_layouts=Shard(0), use_local_output=False),
        })
    return model


def _step(model, optimizer, x, plan: str):
    if plan == "tp":
        from torch.distributed.tensor import Shard, distribute_tensor

        x = distribute_tensor(x, model[0].gate.weight.device_mesh, [Shard(0)])
    loss = model(x).float().pow(2).mean()
    if plan == "tp":
        loss = loss.full_tensor()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args()
    on_gpu = args.device == "cuda"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if on_gpu:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if on_gpu else "gloo")
    from torch.distributed.device_mesh import init_device_mesh

    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    mesh = init_device_mesh(args.device, (world,))
    K.register_sharding_rules()
    kinds = ["tile ops", "torch eager"]
    if on_gpu and importlib.util.find_spec("liger_kernel") is not None:  # Liger's kernels need a GPU
        kinds.append("Liger")
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    result, rows = {"world": world, "device": args.device, "plans": {}}, {}
    for plan in ("fsdp2", "tp"):
        models = {k: _parallelized(_model(k, device), plan, mesh) for k in kinds if plan == "fsdp2" or k != "Liger"}
        optimizers = {k: torch.optim.SGD(m.parameters(), lr=1e-3) for k, m in models.items()}
        gen = torch.Generator().manual_seed(rank if plan == "fsdp2" else 0)  # TP: every rank the same tokens
        x = torch.randn(args.tokens // (world if plan == "fsdp2" else 1), DIM, generator=gen).to(device)
        times = {k: [] for k in models}
        before = tt.runtime_counters()
        for step in range(args.steps + 3):  # three warm-up steps
            for kind, model in models.items():
                sync()
                start = time.perf_counter()
                _step(model, optimizers[kind], x, plan)
                sync()
                if step >= 3:
                    times[kind].append((time.perf_counter() - start) * 1e3)
        after = tt.runtime_counters()
        steps = args.steps + 3
        per_rank = [None] * world
        dist.all_gather_object(per_rank, after["compiles"])
        medians = {k: statistics.median(v) for k, v in times.items()}
        result["plans"][plan] = {
            "ms_per_step": medians,
            "host_entries_per_tile_step": (after["host_entries"] - before["host_entries"]) / steps,
            "fallback_calls_per_tile_step": (after["fallback_calls"] - before["fallback_calls"]) / steps,
            "compiles_per_rank": per_rank,
        }
        rows.update({f"{plan}: {k}": v for k, v in medians.items()})
        if rank == 0:
            for k, v in medians.items():
                print(f"{plan:6s} {k:12s} {v:9.3f} ms/step")
            print(f"{plan:6s} compiles per rank {per_rank}; per tile step: host entries "
                  f"{result['plans'][plan]['host_entries_per_tile_step']:.2f}, fallback calls "
                  f"{result['plans'][plan]['fallback_calls_per_tile_step']:.2f}")
    if rank == 0:
        from _report import write

        os.makedirs(args.out, exist_ok=True)
        write(args.out, "distributed_step", result, rows, xlabel="ms per training step", unit="ms",
              title=f"{LAYERS}-layer decoder, {world} ranks ({args.device})", highlight="tile ops")
    # Every rank tears its process group down together: gloo's can abort a rank that destroys it while another
    # still writes its report ("terminate called without an active exception").
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
