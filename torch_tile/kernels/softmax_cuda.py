"""``tile::softmax_cuda``: ``tile::softmax`` with its kernel written in CUDA C++
(``softmax.cu``, compiled with NVRTC) instead of Triton: same checks, same
results, launched by the same native runtime."""

import os

import torch

import torch_tile as tt

from ._common import check_2d, check_float, check_rows_contiguous

softmax_rows = tt.CudaKernel(os.path.join(os.path.dirname(__file__), "softmax.cu"), "softmax_rows")


@tt.op("tile::softmax_cuda")
def softmax_cuda(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=-1) for a 2-D floating-point tensor whose rows are contiguous (any row stride)."""
    op = "tile::softmax_cuda"
    check_2d(op, "x", x)
    check_float(op, "x", x)
    check_rows_contiguous(op, "x", x)
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_cols == 0 or n_rows == 0:
        return out
    block = 128 if n_cols <= 2048 else 256  # a branch on a size: a guard in the plan
    acc = "double" if x.dtype == torch.float64 else "float"
    softmax_rows[(n_rows,), block](out, x, x.stride(0), out.stride(0), n_cols, template_args=(x.dtype, acc, block))
    return out
