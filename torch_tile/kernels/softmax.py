"""Fused softmax over the last dimension of a 2-D tensor (one program per row)."""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import acc_dtype, check_2d, check_float, check_rows_contiguous


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride may pass 2**31
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(ACC)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@tt.op("tile::softmax")
def softmax(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=-1) for a 2-D floating-point tensor whose rows are contiguous (any row stride)."""
    op = "tile::softmax"
    check_2d(op, "x", x)
    check_float(op, "x", x)  # as torch.softmax: no integer softmax
    check_rows_contiguous(op, "x", x)
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_cols == 0:
        return out  # nothing to normalise (and tl.arange needs a positive block)
    BLOCK = triton.next_power_of_2(n_cols)
    num_warps = 4 if BLOCK < 2048 else 8  # a branch on a size: a guard in the plan
    softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK=BLOCK,
                              ACC=acc_dtype(x.dtype), num_warps=num_warps)
    return out
