"""Layer-norm forward over the last dimension; returns (out, mean, rstd) as
``torch.native_layer_norm`` does, except that mean and rstd are vectors of one
value per row (shape ``(rows,)``), float32 (float64 for float64 input)."""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import acc_dtype, stats_dtype


@triton.jit
def layer_norm_kernel(out_ptr, x_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, x_stride, out_stride, n_cols, eps,
                      BLOCK: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(ACC)
    y = xc * rstd * w + b
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean.to(mean_ptr.dtype.element_ty))
    tl.store(rstd_ptr + row, rstd.to(rstd_ptr.dtype.element_ty))


@tt.op("tile::layer_norm")
def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
               eps: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Normalises each row of a 2-D ``x``; ``weight``/``bias`` have x.shape[1] elements."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError("tile::layer_norm: x must be 2-D with contiguous rows")
    n_rows, n_cols = x.shape
    if weight.numel() != n_cols or bias.numel() != n_cols:
        raise ValueError("tile::layer_norm: weight and bias need x.shape[1] elements")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    mean = torch.empty((n_rows,), dtype=stats_dtype(x.dtype), device=x.device)
    rstd = torch.empty((n_rows,), dtype=stats_dtype(x.dtype), device=x.device)
    if n_cols == 0:
        raise ValueError("tile::layer_norm: cannot normalise rows of 0 elements")
    BLOCK = triton.next_power_of_2(n_cols)
    num_warps = min(max(BLOCK // 256, 1), 8)
    layer_norm_kernel[(n_rows,)](out, x, weight, bias, mean, rstd, x.stride(0), out.stride(0), n_cols, eps,
                                 BLOCK=BLOCK, ACC=acc_dtype(x.dtype), num_warps=num_warps)
    return out, mean, rstd
