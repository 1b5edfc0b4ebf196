"""Small ops for the hardening tests (tests/test_{cpu,gpu}_hardening.py),
defined once so that both files can run in one process."""

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from shared_kernels import copy_kernel, scale_kernel


@triton.jit
def raw_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@tt.op("hardening::flag_copy")
def flag_copy(x: torch.Tensor, n: int, flag: bool) -> torch.Tensor:
    """A copy of x's first n elements when flag (zeros otherwise)."""
    out = torch.zeros_like(x)
    if flag:
        copy_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out


def _alloc(x: torch.Tensor, rank: int, size: int) -> torch.Tensor:
    return torch.zeros([size] * int(rank), device=x.device)


alloc = tt.op("hardening::alloc", _alloc)
alloc_strict = tt.op("hardening::alloc_strict", _alloc, fallback=False)


@tt.op("hardening::copy_into", mutates_args=("out",))
def copy_into(out: torch.Tensor, src: torch.Tensor) -> None:
    n = src.numel()
    copy_kernel[(triton.cdiv(n, 128),)](src, out, n, BLOCK=128)


@tt.op("hardening::copy_both", mutates_args=("a", "b"))
def copy_both(a: torch.Tensor, b: torch.Tensor, src: torch.Tensor) -> None:
    n = src.numel()
    copy_kernel[(triton.cdiv(n, 128),)](src, a, n, BLOCK=128)
    copy_kernel[(triton.cdiv(n, 128),)](src, b, n, BLOCK=128)


@tt.op("hardening::raw_add")
def raw_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y with no dtype check (what the kernel does with fp8 is Triton's)."""
    out = torch.empty_like(x)
    n = x.numel()
    raw_add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    return out


@triton.jit
def grid_copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    program = tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
    offsets = program * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)


@tt.op("hardening::decayed")
def decayed(x: torch.Tensor, step: int) -> torch.Tensor:
    """bitsandbytes' optimizer wrappers: an int argument in float arithmetic (``beta ** step``), which a plan
    guards by value: one plan per step."""
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 128),)](out, x, 0.99 ** step, x.numel(), BLOCK=128)
    return out


@tt.op("hardening::grid_copy")
def grid_copy(x: torch.Tensor, gx: int, gy: int, gz: int) -> torch.Tensor:
    """The first gx * gy * gz blocks of 128 elements of x, copied by a (gx, gy, gz) grid; zeros elsewhere."""
    out = torch.zeros_like(x)
    grid_copy_kernel[(gx, gy, gz)](x, out, x.numel(), BLOCK=128)
    return out


def check_allocation_rank_past_the_limit(x: torch.Tensor) -> None:
    """What no plan holds (a rank past the limit): alloc_strict raises a TraceError naming the op; alloc falls
    back and its body runs as it would without torch_tile (on x's device)."""
    rank = tt._C.MAX_SHAPE_RANK + 1
    with pytest.raises(tt.TraceError, match=rf"hardening::alloc_strict: .*allocation of rank {rank}; at most"):
        alloc_strict(x, rank, 1)
    with pytest.warns(RuntimeWarning, match=rf"hardening::alloc: calls like this one run the op body in Python .*"
                                            rf"allocation of rank {rank}; at most"):
        out = alloc(x, rank, 1)
    assert torch.equal(out, torch.zeros([1] * rank, device=x.device))
