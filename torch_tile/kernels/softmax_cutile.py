"""``tile::softmax_cutile``: ``tile::softmax`` with its kernel written in cuTile
(``cuda.tile``, NVIDIA's tile language), launched as cuTile users launch it,
``ct.launch(stream, grid, kernel, args)``, and run by torch_tile's native
runtime. Needs cuda-tile (``pip install torch_tile[cutile]``); importing this
module registers the op (``torch_tile.kernels`` does not import it)."""

import cuda.tile as ct
import torch
import triton

import torch_tile as tt

from ._common import check_2d, check_dtype


@ct.kernel
def softmax_rows(x, out, TILE_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TILE_N), padding_mode=ct.PaddingMode.NEG_INF)
    t = ct.astype(t, ct.float32)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(out, index=(row, 0), tile=ct.astype(e / ct.sum(e, axis=1, keepdims=True), out.dtype))


@tt.op("tile::softmax_cutile")
def softmax_cutile(x: torch.Tensor) -> torch.Tensor:
    """softmax(x, dim=-1) for a 2-D float32/float16/bfloat16 tensor (any strides), rows up to 16384 long."""
    op = "tile::softmax_cutile"
    check_2d(op, "x", x)
    check_dtype(op, "x", x, (torch.float32, torch.float16, torch.bfloat16), "float32, float16 or bfloat16")
    n_rows, n_cols = x.shape
    if n_cols > 16384:
        raise ValueError(f"{op}: rows of {n_cols} elements; at most 16384 fit one tile")
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    if n_rows == 0 or n_cols == 0:
        return out
    # The op launches on the current torch stream whatever the body passes; a CPU stand-in (a bundle exported
    # without a GPU) has no CUDA stream to name.
    stream = torch.cuda.current_stream() if x.is_cuda else 0
    ct.launch(stream, (n_rows,), softmax_rows, (x, out, triton.next_power_of_2(n_cols)))
    return out
