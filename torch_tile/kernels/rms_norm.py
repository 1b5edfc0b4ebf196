"""RMS norm over the last dimension of a 2-D tensor, forward and backward.

* ``tile::rms_norm(x, weight, eps) -> (out, rstd)``:
  ``out = x * rstd * weight`` with ``rstd = 1 / sqrt(mean(x**2) + eps)`` per row;
  rstd is float32 (float64 for float64 x), shape ``(rows,)``.
* ``tile::rms_norm_backward(grad_out, x, weight, rstd) -> (grad_x, grad_weight)``:
  grad_weight is fully reduced over rows (shape ``(cols,)``, weight's dtype): each
  of at most 256 programs accumulates a partial sum over a stride of rows, and a
  second launch adds the partials up.

Statistics and arithmetic are float32 for 16/32-bit inputs, float64 for float64
(so gradcheck works). ``rms_norm`` has autograd: rstd is a non-differentiable output.
"""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import (MAX_PARTIALS, acc_dtype, check_2d, check_float, check_same, check_vector, launch_column_sum,
                      row_warps, stats_dtype)


@triton.jit
def rms_norm_kernel(out_ptr, rstd_ptr, x_ptr, w_ptr, x_stride0, x_stride1, w_stride, out_stride, n_cols, eps,
                    BLOCK: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride0 + cols * x_stride1, mask=mask, other=0.0).to(ACC)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols * w_stride, mask=mask, other=0.0).to(ACC)
    tl.store(out_ptr + row * out_stride + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(rstd_ptr + row, rstd.to(rstd_ptr.dtype.element_ty))


@triton.jit
def rms_norm_backward_kernel(grad_x_ptr, partial_ptr, grad_out_ptr, x_ptr, w_ptr, rstd_ptr, g_stride0, g_stride1,
                             x_stride0, x_stride1, w_stride, rstd_stride, gx_stride, n_rows, n_cols,
                             BLOCK: tl.constexpr, ACC: tl.constexpr):
    # Program p handles rows p, p + P, p + 2P...; it writes grad_x for them and
    # its partial grad_weight sum into row p of partial (P, n_cols).
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols * w_stride, mask=mask, other=0.0).to(ACC)
    dw = tl.zeros((BLOCK,), dtype=ACC)
    for row in range(pid.to(tl.int64), n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * x_stride0 + cols * x_stride1, mask=mask, other=0.0).to(ACC)
        g = tl.load(grad_out_ptr + row * g_stride0 + cols * g_stride1, mask=mask, other=0.0).to(ACC)
        rstd = tl.load(rstd_ptr + row * rstd_stride).to(ACC)
        gw = g * w
        # d/dx of x * rstd * w: rstd * gw - x * rstd^3 * mean(gw * x)
        c = tl.sum(gw * x, axis=0) / n_cols
        dx = rstd * gw - x * (rstd * rstd * rstd * c)
        tl.store(grad_x_ptr + row * gx_stride + cols, dx.to(grad_x_ptr.dtype.element_ty), mask=mask)
        dw += g * x * rstd
    tl.store(partial_ptr + pid.to(tl.int64) * n_cols + cols, dw.to(partial_ptr.dtype.element_ty), mask=mask)


def _check_inputs(op: str, x, weight) -> None:
    check_2d(op, "x", x)
    check_float(op, "x", x)
    check_float(op, "weight", weight)
    if x.shape[1] == 0:
        raise ValueError(f"{op}: cannot normalise rows of 0 elements")
    check_vector(op, "weight", weight, x.shape[1], "x.shape[1]")


@tt.op("tile::rms_norm")
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """RMS-normalises each row of a 2-D ``x`` and scales by ``weight`` (x.shape[1] elements)."""
    _check_inputs("tile::rms_norm", x, weight)
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    rstd = torch.empty((n_rows,), dtype=stats_dtype(x.dtype), device=x.device)
    BLOCK = triton.next_power_of_2(n_cols)
    rms_norm_kernel[(n_rows,)](out, rstd, x, weight, x.stride(0), x.stride(1), weight.stride(0), out.stride(0), n_cols,
                               eps, BLOCK=BLOCK, ACC=acc_dtype(x.dtype), num_warps=row_warps(BLOCK))
    return out, rstd


@tt.op("tile::rms_norm_backward")
def rms_norm_backward(grad_out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                      rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(grad_x, grad_weight) of ``tile::rms_norm`` given the forward's ``rstd``."""
    op = "tile::rms_norm_backward"
    _check_inputs(op, x, weight)
    check_same(op, "grad_out", grad_out, "x", x)
    n_rows, n_cols = x.shape
    check_vector(op, "rstd", rstd, n_rows, "x.shape[0]")
    if rstd.dtype != stats_dtype(x.dtype):
        raise ValueError(f"{op}: rstd must be {stats_dtype(x.dtype)} for x of {x.dtype}, got {rstd.dtype}")
    grad_x = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    grad_w = torch.empty((n_cols,), dtype=weight.dtype, device=x.device)
    n_partial = tt.sym_max(tt.sym_min(n_rows, MAX_PARTIALS), 1)  # >= 1: no rows still writes zeros
    acc = acc_dtype(x.dtype)
    partial = torch.empty((n_partial, n_cols), dtype=stats_dtype(x.dtype), device=x.device)
    BLOCK = triton.next_power_of_2(n_cols)
    rms_norm_backward_kernel[(n_partial,)](
        grad_x, partial, grad_out, x, weight, rstd, grad_out.stride(0), grad_out.stride(1), x.stride(0), x.stride(1),
        weight.stride(0), rstd.stride(0), grad_x.stride(0), n_rows, n_cols, BLOCK=BLOCK, ACC=acc,
        num_warps=row_warps(BLOCK))
    launch_column_sum(grad_w, partial, n_partial, n_cols, acc)
    return grad_x, grad_w


def _rms_norm_setup(ctx, inputs, output):
    x, weight = inputs[0], inputs[1]
    _out, rstd = output
    ctx.save_for_backward(x, weight, rstd)
    ctx.mark_non_differentiable(rstd)


def _rms_norm_backward(ctx, grad_out, _grad_rstd):
    x, weight, rstd = ctx.saved_tensors
    grad_x, grad_w = rms_norm_backward(grad_out, x, weight, rstd)
    return grad_x, grad_w, None


rms_norm.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)
