"""Backward of ``tile::softmax`` and its autograd registration.

* ``tile::softmax_backward(grad_out, out) -> grad_in``:
  ``grad_in = out * (grad_out - sum(grad_out * out, dim=-1))`` per row, from the
  forward's output (any strides; float32 arithmetic, float64 for float64).

Importing this module registers autograd for ``tile::softmax`` (defined in
softmax.py), which saves its output for the backward.
"""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import acc_dtype, check_2d, check_float, check_same
from .softmax import softmax


@triton.jit
def softmax_backward_kernel(grad_in_ptr, grad_out_ptr, out_ptr, g_stride0, g_stride1, y_stride0, y_stride1,
                            gi_stride, n_cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    g = tl.load(grad_out_ptr + row * g_stride0 + cols * g_stride1, mask=mask, other=0.0).to(ACC)
    y = tl.load(out_ptr + row * y_stride0 + cols * y_stride1, mask=mask, other=0.0).to(ACC)
    dot = tl.sum(g * y, axis=0)
    tl.store(grad_in_ptr + row * gi_stride + cols, (y * (g - dot)).to(grad_in_ptr.dtype.element_ty), mask=mask)


@tt.op("tile::softmax_backward")
def softmax_backward(grad_out: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Gradient of row softmax with respect to its input, given its output ``out``."""
    op = "tile::softmax_backward"
    check_2d(op, "out", out)
    check_float(op, "out", out)
    check_same(op, "grad_out", grad_out, "out", out)
    n_rows, n_cols = out.shape
    grad_in = torch.empty((n_rows, n_cols), dtype=out.dtype, device=out.device)
    if n_cols == 0:
        return grad_in  # nothing to do (and tl.arange needs a positive block)
    BLOCK = triton.next_power_of_2(n_cols)
    num_warps = 4 if BLOCK < 2048 else 8
    softmax_backward_kernel[(n_rows,)](grad_in, grad_out, out, grad_out.stride(0), grad_out.stride(1), out.stride(0),
                                       out.stride(1), grad_in.stride(0), n_cols, BLOCK=BLOCK,
                                       ACC=acc_dtype(out.dtype), num_warps=num_warps)
    return grad_in


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward(ctx, grad_out):
    (out,) = ctx.saved_tensors
    return softmax_backward(grad_out, out)


softmax.register_autograd(_softmax_backward, setup_context=_softmax_setup)
