"""Checks of tile ops in torch.distributed, run in WORLD processes of one process group: over gloo on CPU tensors
(tile ops run through Triton's interpreter; tests/test_cpu_distributed.py) and over NCCL on one GPU per rank
(tests/test_gpu_distributed.py). Tile ops on DTensor arguments: sharding rules (torch's kind, and the shorthands
checked against the op's fake implementation), results and gradients against torch on the whole tensors, and the
placements DTensor keeps (no redistribution where the rule takes the arguments' placements); FSDP2 and tensor plus
sequence parallel models of tile ops trained against one process."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import triton
import triton.language as tl

import torch_tile as tt

WORLD = 2


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + row, tl.sum(tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0), axis=0))


@tt.op("dist_test::row_sum")
def row_sum(x: torch.Tensor) -> torch.Tensor:
    """A sum per row: rowwise, not elementwise (its output drops the last dimension)."""
    x = x.contiguous()
    out = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
    _row_sum_kernel[(out.numel(),)](x, out, x.shape[-1], BLOCK=triton.next_power_of_2(x.shape[-1]))
    return out


@tt.op("dist_test::row_sum_unruled")
def row_sum_unruled(x: torch.Tensor) -> torch.Tensor:
    return row_sum.fn(x)


@tt.op("dist_test::row_sum_as_elementwise")
def row_sum_as_elementwise(x: torch.Tensor) -> torch.Tensor:
    return row_sum.fn(x)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _on_ranks(rank: int, port: int, device_type: str, checks) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if device_type == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if device_type == "cuda" else "gloo", rank=rank, world_size=WORLD)
    try:
        checks(rank, device_type)
        dist.barrier()  # every rank tears the group down together: gloo can abort a rank that leaves first
    finally:
        dist.destroy_process_group()


def spawn(checks, device_type: str) -> None:
    """``checks(rank, device_type)`` in each of WORLD processes of one group: gloo for "cpu", NCCL with one GPU per
    rank for "cuda" (an error in any fails the test)."""
    mp.spawn(_on_ranks, args=(_free_port(), device_type, checks), nprocs=WORLD)


def _device(device_type: str) -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if device_type == "cuda" else torch.device("cpu")


def sharding_checks(rank: int, device_type: str) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    from torch_tile import kernels as K

    K.register_sharding_rules()
    row_sum.register_sharding("rowwise")
    row_sum_as_elementwise.register_sharding("elementwise")
    mesh = init_device_mesh(device_type, (WORLD,))
    device = _device(device_type)
    gen = torch.Generator().manual_seed(0)  # the same tensors on every rank
    x, y, g = (torch.randn(8, 16, generator=gen).to(device) for _ in range(3))
    w = torch.randn(16, generator=gen).to(device)

    def close(got, want):
        torch.testing.assert_close(got.full_tensor(), want, rtol=1e-5, atol=1e-5)

    for placement in (Shard(0), Shard(1), Replicate()):
        dx, dy = distribute_tensor(x, mesh, [placement]), distribute_tensor(y, mesh, [placement])
        out = torch.ops.tile.add(dx, dy)
        close(out, x + y)
        assert out.placements == (placement,), out.placements  # run on the shards, as they are
        out = torch.ops.tile.softmax(dx)
        close(out, torch.softmax(x, -1))
        # Rows split stay split; the last dimension split is gathered first (the rule has no such pair).
        assert out.placements == ((Shard(0),) if placement == Shard(0) else (Replicate(),)), out.placements
        normed, rstd = torch.ops.tile.rms_norm(dx, distribute_tensor(w, mesh, [Replicate()]))
        close(normed, torch.nn.functional.rms_norm(x, (16,), w, 1e-6))
        close(rstd, torch.rsqrt(x.pow(2).mean(-1) + 1e-6))
        close(row_sum(dx), x.sum(-1))

    # Gradients: the op's registered backward calls tile::softmax_backward on the shards too.
    dx = distribute_tensor(x, mesh, [Shard(0)]).requires_grad_()
    torch.ops.tile.softmax(dx).backward(distribute_tensor(g, mesh, [Shard(0)]))
    leaf = x.clone().requires_grad_()
    torch.softmax(leaf, -1).backward(g)
    assert dx.grad.placements == (Shard(0),)
    close(dx.grad, leaf.grad)

    dx = distribute_tensor(x, mesh, [Shard(0)])
    with pytest.raises(RuntimeError, match=r"dist_test::row_sum_as_elementwise: its sharding is declared elementwise, "
                                           r"but output 0 has shape \[8\]"):
        row_sum_as_elementwise(dx)
    with pytest.raises(NotImplementedError, match="dist_test.row_sum_unruled.default"):
        row_sum_unruled(dx)


class _RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return torch.ops.tile.rms_norm(x, self.weight)[0]


class _Block(nn.Module):
    """A decoder-style block over (tokens, dim) whose norm and activation are tile ops (with native backward ops)."""

    def __init__(self, dim: int = 16, hidden: int = 32):
        super().__init__()
        self.norm = _RMSNorm(dim)
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(torch.ops.tile.swiglu(self.gate(h), self.up(h)))


def _model(device: torch.device, dtype=torch.float32) -> nn.Module:
    torch.manual_seed(0)  # the same weights on every rank and for the reference
    from torch_tile import kernels  # noqa: F401  (registers tile::rms_norm, tile::swiglu)
    return nn.Sequential(_Block(), _Block()).to(device, dtype)


def _loss(model: nn.Module, x: torch.Tensor, checkpointed: bool = False) -> torch.Tensor:
    for block in model:
        x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) if checkpointed else block(x)
    return x.float().pow(2).sum()


def fsdp_checks(rank: int, device_type: str) -> None:
    """fully_shard per block and over the model, eager; with mixed precision and activation checkpointing; under
    torch.compile."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    device = _device(device_type)
    x = torch.randn(10, 16, generator=torch.Generator().manual_seed(1)).to(device)
    for mixed, checkpointed, compiled in ((False, False, False), (True, True, False), (False, False, True)):
        reference, model = _model(device), _model(device)
        policy = MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32) if mixed else \
            MixedPrecisionPolicy()
        for block in model:
            fully_shard(block, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        local = x.chunk(WORLD)[rank]  # each rank its half of the tokens
        loss = torch.compile(model)(local).float().pow(2).sum() if compiled else _loss(model, local, checkpointed)
        loss.backward()
        _loss(reference.to(torch.float16) if mixed else reference, x.to(torch.float16) if mixed else x).backward()
        tol = dict(rtol=2e-2, atol=2e-2) if mixed else dict(rtol=1e-5, atol=1e-5)
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            # FSDP2 averages the ranks' gradients: the reference's (the whole batch's) over the world's size.
            torch.testing.assert_close(p.grad.full_tensor(), q.grad.float() / WORLD, **tol, msg=name)


def tensor_parallel_checks(rank: int, device_type: str) -> None:
    """A block's norm sequence parallel, its linear layers column- and row-wise; eager, then under
    torch.compile(fullgraph=True)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)

    from torch_tile import kernels as K

    K.register_sharding_rules()
    mesh = init_device_mesh(device_type, (WORLD,))
    device = _device(device_type)
    x = torch.randn(10, 16, generator=torch.Generator().manual_seed(1)).to(device)
    for compiled in (False, True):
        reference, model = _model(device), _model(device)
        for block in model:
            # The norm sequence parallel (its input and output sharded over the tokens), gate/up column-wise
            # (their input gathered), down row-wise (its output reduce-scattered over the tokens again).
            parallelize_module(block, mesh, {
                "norm": SequenceParallel(sequence_dim=0), "gate": ColwiseParallel(input_layouts=Shard(0)),
                "up": ColwiseParallel(input_layouts=Shard(0)),
                "down": RowwiseParallel(output_layouts=Shard(0), use_local_output=False),
            })
        out = (torch.compile(model, fullgraph=True) if compiled else model)(distribute_tensor(x, mesh, [Shard(0)]))
        assert out.placements == (Shard(0),)
        loss = out.float().pow(2).sum().full_tensor()
        loss.backward()
        want = _loss(reference, x)
        want.backward()
        torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-4)
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            grad = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
            torch.testing.assert_close(grad, q.grad, rtol=1e-5, atol=1e-5, msg=name)


def benchmark_smoke(out_dir, device_type: str) -> dict:
    """benchmarks/distributed_step.py's own code (FSDP2 and tensor parallel) on WORLD ranks under torchrun, one
    step: its JSON result. Each tile-op model's step takes no fallback call."""
    import json
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.path.join(root, "benchmarks")]),
           "TORCH_TILE_CACHE_DIR": os.path.join(str(out_dir), "cache")}  # one disk cache shared by the ranks
    # --standalone: torchrun takes a free port itself (one picked here could be taken before torchrun binds it)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                           str(WORLD), os.path.join(root, "benchmarks", "distributed_step.py"), "--device",
                           device_type, "--steps", "1", "--tokens", "16", "--out", str(out_dir)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-6000:]
    result = json.loads((out_dir / "distributed_step.json").read_text())
    for plan in ("fsdp2", "tp"):
        assert set(result["plans"][plan]["ms_per_step"]) >= {"tile ops", "torch eager"}
        assert result["plans"][plan]["fallback_calls_per_tile_step"] == 0
    return result
