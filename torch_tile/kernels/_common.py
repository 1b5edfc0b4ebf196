"""Helpers shared by the example ops: argument checks, accumulation dtypes and a column-sum kernel.

Op bodies call these on their arguments' metadata: dtypes and ranks are
constant in every plan; a comparison of a size or stride records a guard, so
a plan traced for an accepted case is never reused for a refused one (the
call is traced again and refused).
"""

import torch
import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# Programs that each accumulate a partial column sum (weight/bias gradients) over
# a stride of rows; a second launch adds the partials up.
MAX_PARTIALS = 256
COL_BLOCK_N = 128
COL_BLOCK_M = 32


def acc_dtype(dtype: torch.dtype):
    """Triton accumulation dtype: float64 for float64 inputs, else float32."""
    return tl.float64 if dtype == torch.float64 else tl.float32


def stats_dtype(dtype: torch.dtype) -> torch.dtype:
    """torch dtype of per-row statistics (rstd, lse, loss): float64 for float64 inputs, else float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def row_warps(block: int) -> int:
    """num_warps for one program per row of ``block`` columns (as tile::layer_norm)."""
    return min(max(block // 256, 1), 8)


def shape_of(t) -> tuple:
    """``t``'s shape as plain ints, for error messages (while tracing, sizes are symbolic)."""
    return tuple(int(s) for s in t.shape)


def strides_of(t) -> tuple:
    """``t``'s strides as plain ints, for error messages (while tracing, strides are symbolic)."""
    return tuple(int(s) for s in t.stride())


def check_dtype(op: str, name: str, t, allowed: tuple, what: str) -> None:
    """``t.dtype`` must be one of ``allowed`` (``what`` names them for the message)."""
    if t.dtype not in allowed:
        raise ValueError(f"{op}: {name} must be {what}, got {t.dtype}")


def check_float(op: str, name: str, t) -> None:
    # fp8 is left out: no kernel here reads it (torch's own ops refuse it too).
    check_dtype(op, name, t, FLOAT_DTYPES, "a floating-point tensor (float16, bfloat16, float32 or float64)")


def check_same_dtype(op: str, name: str, t, ref_name: str, ref) -> None:
    """``t`` must have ``ref``'s dtype (no type promotion in the kernels)."""
    if t.dtype != ref.dtype:
        raise ValueError(f"{op}: {name} has dtype {t.dtype} but {ref_name} has {ref.dtype}")


def check_contiguous(op: str, name: str, t) -> None:
    """For kernels that read ``t`` as a flat vector (an expanded or transposed view would be read wrongly)."""
    if not t.is_contiguous():
        raise ValueError(f"{op}: {name} must be contiguous, got shape {shape_of(t)} and strides {strides_of(t)}")


def check_rows_contiguous(op: str, name: str, t) -> None:
    """For row kernels that read a row of 2-D ``t`` as consecutive elements (any row stride; a
    single column is read right whatever its stride)."""
    if t.stride(1) != 1 and t.shape[1] != 1:
        raise ValueError(f"{op}: rows of {name} must be contiguous ({name}.stride(1) == 1), "
                         f"got strides {strides_of(t)}")


def check_2d(op: str, name: str, t) -> None:
    if t.dim() != 2:
        raise ValueError(f"{op}: {name} must be 2-D (rows, cols), got rank {t.dim()}")


def check_vector(op: str, name: str, t, n, what: str) -> None:
    """``t`` must be 1-D with ``n`` elements (``what`` says what n is)."""
    if t.dim() != 1 or t.shape[0] != n:
        raise ValueError(f"{op}: {name} must be 1-D with {what} elements, got shape {shape_of(t)}")


def check_same(op: str, name: str, t, ref_name: str, ref) -> None:
    """``t`` must have the shape and dtype of ``ref``."""
    check_same_dtype(op, name, t, ref_name, ref)
    if t.dim() != ref.dim() or tuple(t.shape) != tuple(ref.shape):
        raise ValueError(f"{op}: {name} has shape {shape_of(t)} but {ref_name} has {shape_of(ref)}")


@triton.jit
def column_sum_kernel(out_ptr, partial_ptr, n_partial, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      ACC: tl.constexpr):
    """out[c] = sum_i partial[i, c] for a contiguous (n_partial, n_cols) buffer."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    acc = tl.zeros((BLOCK_N,), dtype=ACC)
    for start in range(0, n_partial, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_partial) & col_mask[None, :]
        tile = tl.load(partial_ptr + rows[:, None].to(tl.int64) * n_cols + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(tile.to(ACC), axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=col_mask)


def launch_column_sum(out, partial, n_partial, n_cols, acc) -> None:
    """Reduces ``partial`` (n_partial, n_cols) over its rows into ``out`` (n_cols,) (from an op body)."""
    column_sum_kernel[(triton.cdiv(n_cols, COL_BLOCK_N),)](out, partial, n_partial, n_cols, BLOCK_M=COL_BLOCK_M,
                                                            BLOCK_N=COL_BLOCK_N, ACC=acc)
