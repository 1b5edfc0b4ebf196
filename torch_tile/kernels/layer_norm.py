"""Layer-norm forward over the last dimension; returns (out, mean, rstd) as
``torch.native_layer_norm`` does, except that mean and rstd are vectors of one
value per row (shape ``(rows,)``), float32 (float64 for float64 input)."""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import acc_dtype, check_2d, check_float, check_rows_contiguous, check_vector, row_warps, stats_dtype


@triton.jit
def layer_norm_kernel(out_ptr, x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_stride, out_stride, n_cols, eps,
                      w_stride, b_stride, BLOCK: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride may pass 2**31
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols * w_stride, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + cols * b_stride, mask=mask, other=0.0).to(ACC)
    y = xc * rstd * w + b
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean.to(mean_ptr.dtype.element_ty))
    tl.store(rstd_ptr + row, rstd.to(rstd_ptr.dtype.element_ty))


@tt.op("tile::layer_norm")
def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
               eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Normalises each row of a 2-D ``x`` with contiguous rows (any row stride); ``weight``/``bias``
    are vectors of x.shape[1] elements of any stride and floating dtype (read in the accumulation dtype)."""
    op = "tile::layer_norm"
    check_2d(op, "x", x)
    check_float(op, "x", x)
    check_rows_contiguous(op, "x", x)
    n_rows, n_cols = x.shape
    check_vector(op, "weight", weight, n_cols, "x.shape[1]")
    check_vector(op, "bias", bias, n_cols, "x.shape[1]")
    check_float(op, "weight", weight)
    check_float(op, "bias", bias)
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    mean = torch.empty((n_rows,), dtype=stats_dtype(x.dtype), device=x.device)
    rstd = torch.empty((n_rows,), dtype=stats_dtype(x.dtype), device=x.device)
    if n_cols == 0:
        raise ValueError(f"{op}: cannot normalise rows of 0 elements")
    BLOCK = triton.next_power_of_2(n_cols)
    layer_norm_kernel[(n_rows,)](out, x, weight, bias, mean, rstd, x.stride(0), out.stride(0), n_cols, eps,
                                 weight.stride(0), bias.stride(0), BLOCK=BLOCK, ACC=acc_dtype(x.dtype),
                                 num_warps=row_warps(BLOCK))
    return out, mean, rstd
