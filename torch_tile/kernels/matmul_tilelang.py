"""``tile::matmul_tilelang``: a float16 matrix product with its kernel written in TileLang (the GEMM of
TileLang's README: TMA loads pipelined into shared memory, warp-specialised wgmma on Hopper), compiled by TileLang
and called as TileLang users call it, ``c = kernel(a, b)``, then run by torch_tile's native runtime. Sizes are
TileLang dynamic symbols, so one compiled kernel serves every shape. Needs tilelang (``pip install
torch_tile[tilelang]``); importing this module registers the op (``torch_tile.kernels`` does not import it)."""

import functools

import tilelang
import tilelang.language as T
import torch

import torch_tile as tt

from ._common import check_2d, check_dtype, shape_of

BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32


def gemm_func(block_m: int = BLOCK_M, block_n: int = BLOCK_N, block_k: int = BLOCK_K):
    """C[M, N] = A[M, K] @ B[K, N] in float16 (float32 accumulation), M, N and K dynamic."""
    M, N, K = T.dynamic("m"), T.dynamic("n"), T.dynamic("k")
    dtype, accum = T.float16, T.float32

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_n), T.ceildiv(M, block_m), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_m, block_k), dtype)
            B_shared = T.alloc_shared((block_k, block_n), dtype)
            C_local = T.alloc_fragment((block_m, block_n), accum)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_k), num_stages=3):
                T.copy(A[by * block_m, k * block_k], A_shared)
                T.copy(B[k * block_k, bx * block_n], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_m, bx * block_n])

    return gemm


def default_target():
    """The current GPU (TileLang's "cuda"), or Hopper (sm_90a) on a machine without one, where a bundle for the
    H100/H200 is exported."""
    return "cuda" if torch.cuda.is_available() else {"kind": "cuda", "arch": "sm_90a"}


@functools.lru_cache(maxsize=None)
def gemm_kernel() -> "tilelang.JITKernel":
    """The compiled kernel (TileLang's ``JITKernel``; C is allocated by the call, ``out_idx=[-1]``), compiled on
    first use (TileLang caches it on disk)."""
    return tilelang.compile(gemm_func(), out_idx=[-1], target=default_target())


@tt.op("tile::matmul_tilelang")
def matmul_tilelang(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for row-major float16 a (M, K) and b (K, N), K and N multiples of 8 (TMA needs 16-byte rows)."""
    op = "tile::matmul_tilelang"
    check_2d(op, "a", a)
    check_2d(op, "b", b)
    check_dtype(op, "a", a, (torch.float16,), "float16")
    check_dtype(op, "b", b, (torch.float16,), "float16")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{op}: a is {shape_of(a)} and b is {shape_of(b)}: a's columns must be b's rows")
    if a.shape[1] % 8 != 0 or b.shape[1] % 8 != 0:
        raise ValueError(f"{op}: K={int(a.shape[1])} and N={int(b.shape[1])} must be multiples of 8 (16-byte rows "
                         "for TMA)")
    if a.shape[1] == 0:  # no TMA descriptor maps an empty dimension
        return torch.zeros((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    return gemm_kernel()(a, b)  # TileLang refuses strides other than row-major, naming the argument
