"""Elementwise add: the smallest op, used to measure launch overhead."""

import torch
import triton
import triton.language as tl

import torch_tile as tt

BLOCK = 1024


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def _check(x, y):
    if x.shape != y.shape:
        raise ValueError(f"tile::add: x and y must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    if not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError("tile::add: x and y must be contiguous")


@tt.op("tile::add")
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y for contiguous tensors of one shape and dtype."""
    _check(x, y)
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    return out


@tt.op("tile::add_", mutates_args=("x",))
def add_(x: torch.Tensor, y: torch.Tensor) -> None:
    """x += y in place."""
    _check(x, y)
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, x, n, BLOCK=BLOCK)
