"""Backward of ``tile::layer_norm`` and its autograd registration.

* ``tile::layer_norm_backward(grad_out, x, weight, mean, rstd) -> (grad_x, grad_weight, grad_bias)``
  from the forward's per-row ``mean`` and ``rstd`` (float32 vectors of shape
  ``(rows,)``). grad_weight and grad_bias are fully reduced over rows (weight's
  dtype): each of at most 256 programs accumulates partial sums over a stride of
  rows, and a second launch per gradient adds the partials up.

Importing this module registers autograd for ``tile::layer_norm`` (defined in
layer_norm.py); its mean and rstd outputs are non-differentiable. Arithmetic is
float32 (float64 for float64 x, although the forward's statistics are float32).
"""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import (MAX_PARTIALS, acc_dtype, check_2d, check_float, check_same, check_vector, launch_column_sum,
                      row_warps, stats_dtype)
from .layer_norm import layer_norm


@triton.jit
def layer_norm_backward_kernel(grad_x_ptr, dw_partial_ptr, db_partial_ptr, grad_out_ptr, x_ptr, w_ptr, mean_ptr,
                               rstd_ptr, g_stride0, g_stride1, x_stride0, x_stride1, w_stride, mean_stride,
                               rstd_stride, gx_stride, n_rows, n_cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
    # Program p handles rows p, p + P, p + 2P...; its partial weight/bias
    # gradients go to row p of the (P, n_cols) partial buffers.
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols * w_stride, mask=mask, other=0.0).to(ACC)
    dw = tl.zeros((BLOCK,), dtype=ACC)
    db = tl.zeros((BLOCK,), dtype=ACC)
    for row in range(pid.to(tl.int64), n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * x_stride0 + cols * x_stride1, mask=mask, other=0.0).to(ACC)
        g = tl.load(grad_out_ptr + row * g_stride0 + cols * g_stride1, mask=mask, other=0.0).to(ACC)
        mean = tl.load(mean_ptr + row * mean_stride).to(ACC)
        rstd = tl.load(rstd_ptr + row * rstd_stride).to(ACC)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        gw = g * w
        c1 = tl.sum(xhat * gw, axis=0) / n_cols
        c2 = tl.sum(gw, axis=0) / n_cols
        dx = (gw - (xhat * c1 + c2)) * rstd
        tl.store(grad_x_ptr + row * gx_stride + cols, dx.to(grad_x_ptr.dtype.element_ty), mask=mask)
        dw += g * xhat
        db += g
    offsets = pid.to(tl.int64) * n_cols + cols
    tl.store(dw_partial_ptr + offsets, dw.to(dw_partial_ptr.dtype.element_ty), mask=mask)
    tl.store(db_partial_ptr + offsets, db.to(db_partial_ptr.dtype.element_ty), mask=mask)


@tt.op("tile::layer_norm_backward")
def layer_norm_backward(grad_out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor,
                        rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_x, grad_weight, grad_bias) of ``tile::layer_norm`` given the forward's ``mean`` and ``rstd``."""
    op = "tile::layer_norm_backward"
    check_2d(op, "x", x)
    check_float(op, "x", x)
    check_float(op, "weight", weight)
    check_same(op, "grad_out", grad_out, "x", x)
    n_rows, n_cols = x.shape
    if n_cols == 0:
        raise ValueError(f"{op}: cannot normalise rows of 0 elements")
    check_vector(op, "weight", weight, n_cols, "x.shape[1]")
    check_vector(op, "mean", mean, n_rows, "x.shape[0]")
    check_vector(op, "rstd", rstd, n_rows, "x.shape[0]")
    check_float(op, "mean", mean)
    check_float(op, "rstd", rstd)
    grad_x = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    grad_w = torch.empty((n_cols,), dtype=weight.dtype, device=x.device)
    grad_b = torch.empty((n_cols,), dtype=weight.dtype, device=x.device)
    n_partial = tt.sym_max(tt.sym_min(n_rows, MAX_PARTIALS), 1)  # >= 1: no rows still writes zeros
    acc = acc_dtype(x.dtype)
    dw_partial = torch.empty((n_partial, n_cols), dtype=stats_dtype(x.dtype), device=x.device)
    db_partial = torch.empty((n_partial, n_cols), dtype=stats_dtype(x.dtype), device=x.device)
    BLOCK = triton.next_power_of_2(n_cols)
    layer_norm_backward_kernel[(n_partial,)](
        grad_x, dw_partial, db_partial, grad_out, x, weight, mean, rstd, grad_out.stride(0), grad_out.stride(1),
        x.stride(0), x.stride(1), weight.stride(0), mean.stride(0), rstd.stride(0), grad_x.stride(0), n_rows, n_cols,
        BLOCK=BLOCK, ACC=acc, num_warps=row_warps(BLOCK))
    launch_column_sum(grad_w, dw_partial, n_partial, n_cols, acc)
    launch_column_sum(grad_b, db_partial, n_partial, n_cols, acc)
    return grad_x, grad_w, grad_b


def _layer_norm_setup(ctx, inputs, output):
    x, weight = inputs[0], inputs[1]
    _out, mean, rstd = output
    ctx.save_for_backward(x, weight, mean, rstd)
    ctx.mark_non_differentiable(mean, rstd)


def _layer_norm_backward(ctx, grad_out, _grad_mean, _grad_rstd):
    x, weight, mean, rstd = ctx.saved_tensors
    grad_x, grad_w, grad_b = layer_norm_backward(grad_out, x, weight, mean, rstd)
    return grad_x, grad_w, grad_b, None


layer_norm.register_autograd(_layer_norm_backward, setup_context=_layer_norm_setup)
