"""Triton kernels several test modules launch (one definition each)."""

import triton
import triton.language as tl


@triton.jit
def scale_kernel(out_ptr, x_ptr, alpha, n, BLOCK: tl.constexpr):
    """out = alpha * x over n elements."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = src over n elements."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)
