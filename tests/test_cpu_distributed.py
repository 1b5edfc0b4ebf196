"""Tile ops on DTensor arguments, in two processes over gloo (tile ops on CPU run through Triton's interpreter):
sharding rules (torch's kind, and the shorthands checked against the op's fake implementation), results and
gradients against torch on the whole tensors, and the placements DTensor keeps (no redistribution where the rule
takes the arguments' placements)."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import triton
import triton.language as tl

import torch_tile as tt

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")

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


def _on_ranks(rank: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        _checks()
    finally:
        dist.destroy_process_group()


def _checks() -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    from torch_tile import kernels as K
    from torch_tile.kernels.softmax_backward import softmax_backward

    K.add.register_sharding("elementwise")
    K.softmax.register_sharding("rowwise")
    softmax_backward.register_sharding("rowwise")
    K.rms_norm.register_sharding("rowwise")
    row_sum.register_sharding("rowwise")
    row_sum_as_elementwise.register_sharding("elementwise")
    mesh = init_device_mesh("cpu", (WORLD,))
    gen = torch.Generator().manual_seed(0)  # the same tensors on every rank
    x, y, g = (torch.randn(8, 16, generator=gen) for _ in range(3))
    w = torch.randn(16, generator=gen)

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


def test_tile_ops_run_on_dtensor_shards_as_their_sharding_rules_say():
    mp.spawn(_on_ranks, args=(_free_port(),), nprocs=WORLD)


def test_a_sharding_rule_is_a_callable_or_a_shorthand():
    with pytest.raises(ValueError, match="dist_test::row_sum.register_sharding: unknown shorthand 'columnwise'"):
        row_sum.register_sharding("columnwise")
    with pytest.raises(TypeError, match="the rule must be a callable"):
        row_sum.register_sharding(3)
