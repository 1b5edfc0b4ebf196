"""Tile ops whose bodies launch CUDA C++ kernels (shared by tests/test_cpu_cuda_ops.py and
tests/test_gpu_cuda_ops.py)."""

from __future__ import annotations

import torch
import triton

import torch_tile as tt

SOURCE = r"""
#include <cuda_fp16.h>

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) scale(T* out, const T* x, float s, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) out[i] = T(float(x[i]) * s);
}

// One block per row: the row's sum, through dynamic shared memory.
extern "C" __global__ void row_sum(float* out, const float* x, long long cols) {
  extern __shared__ float partial[];
  const float* row = x + blockIdx.x * cols;
  float acc = 0.f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
"""

scale_kernel = tt.CudaKernel(SOURCE, "scale")
row_sum_kernel = tt.CudaKernel(SOURCE, "row_sum")
BLOCK = 128


@tt.op("cuda_test::scale")
def scale(x: torch.Tensor, s: float) -> torch.Tensor:
    """x * s, by a templated CUDA C++ kernel instantiated for x's dtype."""
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, BLOCK),), BLOCK](out, x, s, n, template_args=(x.dtype, BLOCK))
    return out


@tt.op("cuda_test::row_sum")
def row_sum(x: torch.Tensor) -> torch.Tensor:
    """x.sum(-1) of a float32 matrix, one block of 256 threads per row (1 KB of dynamic shared memory)."""
    x = x.contiguous()
    out = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    row_sum_kernel[(x.shape[0],), 256](out, x, x.shape[1], shared_mem=256 * 4)
    return out


# A specialised kernel (CudaKernel(specialize=True)): each variant sees its arguments' specialization bits
# as macros, and writes them out: 4 * (n % 16 == 0) + 2 * (x 16-byte aligned) + (n == 1).
SPEC_SOURCE = r"""
#if !defined(TT_ALIGNED16_0) || !defined(TT_ALIGNED16_1) || !defined(TT_EQ1_2) || !defined(TT_DIV16_2)
#error "torch_tile passes the specialization bits of every parameter"
#endif
extern "C" __global__ void facts(int* out, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 4 * TT_DIV16_2 + 2 * TT_ALIGNED16_1 + TT_EQ1_2;
}
"""

facts_kernel = tt.CudaKernel(SPEC_SOURCE, "facts", specialize=True)


@tt.op("cuda_test::facts")
def facts(x: torch.Tensor) -> torch.Tensor:
    """Per element of x, the specialization bits its kernel variant was compiled with (see SPEC_SOURCE)."""
    n = x.numel()
    out = torch.empty(n, device=x.device, dtype=torch.int32)
    facts_kernel[(triton.cdiv(n, 128),), 128](out, x, n)
    return out


# cuTile's bits of x's layout (CudaKernel(specialize="cutile")), written out per element:
# 32 * disjoint + 16 * (row stride a multiple of 16 bytes) + 8 * (columns contiguous) + 4 * (rows % 16 == 0)
# + 2 * (a single row) + (x 16-byte aligned).
LAYOUT_SOURCE = r"""
extern "C" __global__ void layout_facts(int* out, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = 32 * TT_DISJOINT_1 + 16 * TT_STRIDE16B_1_0 + 8 * TT_STRIDE1_1_1 + 4 * TT_SIZE16_1_0 + 2 * TT_SIZE1_1_0 +
             TT_ALIGNED16_1;
  }
}
"""

layout_facts_kernel = tt.CudaKernel(LAYOUT_SOURCE, "layout_facts", specialize="cutile")


@tt.op("cuda_test::layout_facts")
def layout_facts(x: torch.Tensor) -> torch.Tensor:
    """Per element of a 2-D x, the cuTile layout bits its kernel variant was compiled with (see LAYOUT_SOURCE)."""
    n = x.numel()
    out = torch.empty(n, device=x.device, dtype=torch.int32)
    layout_facts_kernel[(triton.cdiv(n, 128),), 128](out, x, n)
    return out


VOLUME_SCALE = tt.CudaKernel(r"""
__global__ void volume_scale(float* out, const float* x, float s, int depth, int height, int width) {
  const int w = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y * blockDim.y + threadIdx.y,
            d = blockIdx.z * blockDim.z + threadIdx.z;
  if (d < depth && h < height && w < width) {
    const long long i = ((long long)d * height + h) * width + w;
    out[i] = x[i] * s;
  }
}
""", "volume_scale")


@tt.op("cuda_test::volume_scale")
def volume_scale(x: torch.Tensor, s: float) -> torch.Tensor:
    """x * s for a contiguous 3-D float32 x: one thread per element, blocks of 8 x 8 x 4 threads."""
    out = torch.empty_like(x)
    depth, height, width = x.shape
    grid = (triton.cdiv(width, 8), triton.cdiv(height, 8), triton.cdiv(depth, 4))
    VOLUME_SCALE[grid, (8, 8, 4)](out, x, s, depth, height, width)
    return out
