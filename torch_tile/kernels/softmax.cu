// Row softmax in CUDA C++, the twin of softmax.py's Triton kernel: one block
// per row, the row read three times (max, sum of exponentials, output), the
// accumulation in ACC (double for double inputs, float otherwise).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

template <typename ACC>
__device__ ACC negative_infinity();
template <>
__device__ float negative_infinity<float>() { return __int_as_float(0xff800000); }
template <>
__device__ double negative_infinity<double>() { return __longlong_as_double(0xfff0000000000000ULL); }

template <typename ACC, typename T>
__device__ ACC load_as(const T* p) { return static_cast<ACC>(*p); }
template <typename ACC>
__device__ ACC load_as(const __half* p) { return static_cast<ACC>(__half2float(*p)); }
template <typename ACC>
__device__ ACC load_as(const __nv_bfloat16* p) { return static_cast<ACC>(__bfloat162float(*p)); }

template <typename T, typename ACC>
__device__ T store_as(ACC v) { return static_cast<T>(v); }
template <>
__device__ __half store_as<__half, float>(float v) { return __float2half_rn(v); }
template <>
__device__ __nv_bfloat16 store_as<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

// The block's reduction of `v` (max or sum) through warp shuffles, then one value per warp in `scratch`.
template <bool MAX, typename ACC, int BLOCK>
__device__ ACC block_reduce(ACC v, ACC* scratch) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const ACC other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = MAX ? (other > v ? other : v) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch is reused by consecutive reductions
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < BLOCK / 32; ++w) v = MAX ? (scratch[w] > v ? scratch[w] : v) : v + scratch[w];
  return v;
}

template <typename T, typename ACC, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
softmax_rows(T* out, const T* x, long long in_stride, long long out_stride, int n_cols) {
  __shared__ ACC scratch[BLOCK / 32];
  const T* row = x + blockIdx.x * in_stride;
  T* dst = out + blockIdx.x * out_stride;
  ACC m = negative_infinity<ACC>();
  for (int c = threadIdx.x; c < n_cols; c += BLOCK) {
    const ACC v = load_as<ACC>(row + c);
    m = v > m ? v : m;
  }
  m = block_reduce<true, ACC, BLOCK>(m, scratch);
  ACC sum = 0;
  for (int c = threadIdx.x; c < n_cols; c += BLOCK) sum += exp(load_as<ACC>(row + c) - m);
  sum = block_reduce<false, ACC, BLOCK>(sum, scratch);
  for (int c = threadIdx.x; c < n_cols; c += BLOCK) dst[c] = store_as<T, ACC>(exp(load_as<ACC>(row + c) - m) / sum);
}
