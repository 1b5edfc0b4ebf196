"""Elementwise add: the smallest op, used to measure launch overhead."""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import check_contiguous, check_dtype, check_same_dtype

BLOCK = 1024

# What torch.add computes (fp8 and the wide unsigned types it refuses; complex no kernel here reads).
ADD_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
              torch.float16, torch.bfloat16, torch.float32, torch.float64)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if out_ptr.dtype.element_ty == tl.int1:
        total = x | y  # bool: True + True is True in torch; a 1-bit add would wrap to False
    else:
        total = x + y
    tl.store(out_ptr + offsets, total, mask=mask)


def _check(op: str, x, y):
    if x.shape != y.shape:
        raise ValueError(f"{op}: x and y must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}")
    check_dtype(op, "x", x, ADD_DTYPES, "bool, uint8, int8/16/32/64 or float16/bfloat16/float32/float64")
    check_same_dtype(op, "y", y, "x", x)  # no type promotion: refused rather than computed in x's dtype
    check_contiguous(op, "x", x)  # read as flat vectors
    check_contiguous(op, "y", y)


@tt.op("tile::add")
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y for contiguous tensors of one shape and dtype."""
    _check("tile::add", x, y)
    out = torch.empty_like(x)  # contiguous, as x
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    return out


@tt.op("tile::add_", mutates_args=("x",))
def add_(x: torch.Tensor, y: torch.Tensor) -> None:
    """x += y in place."""
    _check("tile::add_", x, y)
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, x, n, BLOCK=BLOCK)
