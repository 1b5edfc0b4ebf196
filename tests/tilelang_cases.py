"""TileLang kernels the CPU and GPU tests share (tilelang imported by the caller's importorskip first)."""

from __future__ import annotations

import functools
import os

import tilelang
import tilelang.language as T
import torch

import torch_tile as tt
from torch_tile.kernels.matmul_tilelang import default_target


def nvcc_missing() -> str:
    """Why TileLang cannot compile here ("" when it can): it compiles with the CUDA toolkit's nvcc."""
    from tilelang.contrib import nvcc
    try:
        path = nvcc.get_nvcc_compiler()
    except Exception as e:  # noqa: BLE001 - no toolkit found: the reason is the skip's
        return f"TileLang finds no nvcc: {e}"
    return "" if path and os.path.exists(path) else f"TileLang's nvcc ({path}) does not exist (set CUDA_HOME)"


def scale_add_func(block: int = 256, threads: int = 128):
    """out[i] = x[i] * alpha + y[i] for float32 vectors of dynamic length n (pointers, no TMA)."""
    n = T.dynamic("n")

    @T.prim_func
    def scale_add(X: T.Tensor((n,), T.float32), Y: T.Tensor((n,), T.float32), alpha: T.float32,
                  Out: T.Tensor((n,), T.float32)):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Out[bx * block + i] = X[bx * block + i] * alpha + Y[bx * block + i]

    return scale_add


@functools.lru_cache(maxsize=None)
def scale_add_kernel():
    return tilelang.compile(scale_add_func(), out_idx=[-1], target=default_target())


def rows_func(cols: int = 64):
    """Per row of a float16 (rows, 64) tensor, its values plus the row index: a static column count."""
    rows = T.dynamic("rows")

    @T.prim_func
    def add_row_index(X: T.Tensor((rows, cols), T.float16), Out: T.Tensor((rows, cols), T.float16)):
        with T.Kernel(rows, threads=64) as bx:
            for j in T.Parallel(cols):
                Out[bx, j] = X[bx, j] + T.Cast(T.float16, bx)

    return add_row_index


@functools.lru_cache(maxsize=None)
def rows_kernel():
    return tilelang.compile(rows_func(), out_idx=[-1], target=default_target())


@tt.op("tilelang_test::scale_add")
def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return scale_add_kernel()(x, y, alpha)


@tt.op("tilelang_test::add_row_index")
def add_row_index(x: torch.Tensor) -> torch.Tensor:
    return rows_kernel()(x)


@tilelang.jit(out_idx=[-1], target=default_target())
def scale_rows_factory(rows: int, cols: int, block: int = 128):
    """A ``@tilelang.jit`` factory as TileLang's examples write them: static sizes, one kernel per tuple."""

    @T.prim_func
    def scale_rows(X: T.Tensor((rows, cols), T.float32), Out: T.Tensor((rows, cols), T.float32)):
        with T.Kernel(rows, T.ceildiv(cols, block), threads=block) as (r, c):
            for j in T.Parallel(block):
                if c * block + j < cols:
                    Out[r, c * block + j] = X[r, c * block + j] * 2.0

    return scale_rows


@tt.op("tilelang_test::scale_rows")
def scale_rows(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    return scale_rows_factory(rows, cols)(x)
