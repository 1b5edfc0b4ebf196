"""Layer norm over the rows of a 2-D tensor in two launches chained with
programmatic dependent launch (PDL, sm_90+).

Launch 1 (``layer_norm_stats_kernel``) writes each row's mean and rstd to a
scratch buffer and then signals ``gdc_launch_dependents()``. Launch 2
(``layer_norm_apply_kernel``) is launched with ``launch_pdl=True`` (the
programmatic-stream-serialization launch attribute): it may start while launch
1 is still running, loads what does not depend on launch 1 (its row of x, the
weight and the bias) and only then calls ``gdc_wait()``, which blocks until
launch 1 has completed and its memory is visible, before it reads the stats.

Why the prologue may read x: launch 1 is an ordinary launch, so it starts only
after all earlier work on the stream has finished; launch 2 can start only once
every program of launch 1 has signalled or exited, so by then x, weight and
bias are final. The signal's position is a scheduling hint (``gdc_wait`` always
waits for the whole of launch 1); it is placed after launch 1's stores.

On CPU (Triton's interpreter, which cannot execute the ``griddepcontrol``
inline assembly) both kernels run with ``USE_GDC=False``: the calls are left out,
which is exact there since the interpreter runs launches one after another.
"""

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

import torch_tile as tt

from ._common import acc_dtype, check_2d, check_float, check_rows_contiguous, check_vector, row_warps, stats_dtype


@triton.jit
def layer_norm_stats_kernel(x_ptr, stats_ptr, x_stride, n_rows, n_cols, eps, BLOCK: tl.constexpr,
                            ACC: tl.constexpr, USE_GDC: tl.constexpr):
    """stats[0, row] = mean, stats[1, row] = rstd of one row per program."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row.to(tl.int64) * x_stride + cols, mask=mask, other=0.0).to(ACC)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=0) / n_cols + eps)
    tl.store(stats_ptr + row, mean.to(stats_ptr.dtype.element_ty))
    tl.store(stats_ptr + n_rows + row, rstd.to(stats_ptr.dtype.element_ty))
    if USE_GDC:
        gdc_launch_dependents()  # the dependent launch may start; it waits for these stores in gdc_wait


@triton.jit
def layer_norm_apply_kernel(out_ptr, x_ptr, w_ptr, b_ptr, stats_ptr, x_stride, out_stride, w_stride, b_stride,
                            n_rows, n_cols, BLOCK: tl.constexpr, ACC: tl.constexpr, USE_GDC: tl.constexpr):
    """out[row] = (x[row] - mean) * rstd * w + b, with mean/rstd from the stats launch."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # Prologue: independent of the stats launch (may overlap with its tail).
    x = tl.load(x_ptr + row.to(tl.int64) * x_stride + cols, mask=mask, other=0.0).to(ACC)
    w = tl.load(w_ptr + cols * w_stride, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + cols * b_stride, mask=mask, other=0.0).to(ACC)
    if USE_GDC:
        gdc_wait()  # the stats launch has completed and its writes are visible
    mean = tl.load(stats_ptr + row).to(ACC)
    rstd = tl.load(stats_ptr + n_rows + row).to(ACC)
    y = (x - mean) * rstd * w + b
    tl.store(out_ptr + row.to(tl.int64) * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@tt.op("tile::layer_norm_pdl")
def layer_norm_pdl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """F.layer_norm(x, (x.shape[1],), weight, bias, eps) for a 2-D ``x`` with contiguous rows, as a
    statistics launch followed by a PDL launch (see the module docstring). Statistics are float32
    (float64 for float64 input); the output has x's dtype."""
    op = "tile::layer_norm_pdl"
    check_2d(op, "x", x)
    check_float(op, "x", x)
    check_rows_contiguous(op, "x", x)
    n_rows, n_cols = x.shape
    check_vector(op, "weight", weight, n_cols, "x.shape[1]")
    check_vector(op, "bias", bias, n_cols, "x.shape[1]")
    check_float(op, "weight", weight)
    check_float(op, "bias", bias)
    if n_cols == 0:
        raise ValueError(f"{op}: cannot normalise rows of 0 elements")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    stats = torch.empty((2, n_rows), dtype=stats_dtype(x.dtype), device=x.device)  # scratch: mean, rstd
    BLOCK = triton.next_power_of_2(n_cols)
    num_warps = row_warps(BLOCK)
    acc = acc_dtype(x.dtype)
    use_gdc = x.device.type == "cuda"  # the interpreter cannot run griddepcontrol
    layer_norm_stats_kernel[(n_rows,)](x, stats, x.stride(0), n_rows, n_cols, eps, BLOCK=BLOCK, ACC=acc,
                                       USE_GDC=use_gdc, num_warps=num_warps)
    layer_norm_apply_kernel[(n_rows,)](out, x, weight, bias, stats, x.stride(0), out.stride(0), weight.stride(0),
                                       bias.stride(0), n_rows, n_cols, BLOCK=BLOCK, ACC=acc, USE_GDC=use_gdc,
                                       num_warps=num_warps, launch_pdl=use_gdc)
    return out
