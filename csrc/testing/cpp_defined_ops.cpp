#include "cpp_defined_ops.h"

#include <torch_tile/op_definition.h>

#include <mutex>
#include <string>

namespace torch_tile {
namespace {

// out = x * alpha; specialised as Triton does: the variant for 16-byte aligned pointers and an n divisible by
// 16 sees it (TT_* macros) and records what it saw in `seen` (one int per launch, written by thread 0).
const char* kScale = R"(
#include <cuda_fp16.h>
template <typename T>
__global__ void scale(T* out, const T* x, float alpha, long long n, int* seen) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = T(float(x[i]) * alpha);
  if (i == 0) *seen = TT_ALIGNED16_0 * 1 + TT_ALIGNED16_1 * 2 + TT_DIV16_3 * 4;
}
)";

// out[r] = x[r, k] (k from the op's int argument), rows of any stride; a negative k counts from the end.
const char* kPick = R"(
__global__ void pick(float* out, const float* x, long long row_stride, long long k, long long rows) {
  long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (r < rows) out[r] = x[r * row_stride + k];
}
)";

// out = x.t() for a contiguous 2-D x, through a 16 x 16 tile of shared memory: a 2-D block, a 2-D grid.
const char* kTranspose = R"(
__global__ void transpose(float* out, const float* x, int rows, int cols) {
  __shared__ float tile[16][17];
  int c = blockIdx.x * 16 + threadIdx.x, r = blockIdx.y * 16 + threadIdx.y;
  if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = x[(long long)r * cols + c];
  __syncthreads();
  c = blockIdx.y * 16 + threadIdx.x;
  r = blockIdx.x * 16 + threadIdx.y;
  if (r < cols && c < rows) out[(long long)r * rows + c] = tile[threadIdx.x][threadIdx.y];
}
)";

// The cuTile layout bits the variant was compiled for, of x (parameter 1, 2-D), packed into one int:
// bit 0 base 16-byte aligned, 1 disjoint, then per dimension d (0, 1): 2+d stride a multiple of 16 bytes,
// 4+d stride 1, 6+d size divisible by 16, 8+d size 1.
const char* kLayoutBits = R"(
__global__ void layout_bits(int* out, const float* x) {
  *out = TT_ALIGNED16_1 | TT_DISJOINT_1 << 1 | TT_STRIDE16B_1_0 << 2 | TT_STRIDE16B_1_1 << 3 | TT_STRIDE1_1_0 << 4 |
         TT_STRIDE1_1_1 << 5 | TT_SIZE16_1_0 << 6 | TT_SIZE16_1_1 << 7 | TT_SIZE1_1_0 << 8 | TT_SIZE1_1_1 << 9;
}
)";

void define_cpp_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    static const CudaKernel scale(kScale, "scale", {}, /*specialize=*/true);
    define_op("cpp_test::scale(Tensor x, float alpha) -> (Tensor, Tensor)", [](OpBuilder& b) {
      PlanTensor x = b.tensor("x");
      if (x.dtype() != at::kFloat && x.dtype() != at::kHalf) b.refuse("x must be float32 or float16");
      b.check(x.is_contiguous(), "x must be contiguous");
      PlanTensor out = b.empty_like(x);
      PlanTensor seen = b.zeros({1}, at::kInt);
      const IntExpr n = x.numel();
      b.launch(scale, {ceil_div(n, 128)}, 128,
               {KernelArg::pointer(out), KernelArg::pointer(x), KernelArg::f32(b.float_arg("alpha")), KernelArg::i64(n),
                KernelArg::pointer(seen)},
               LaunchOptions{{cuda_type(x.dtype())}});
      b.returns({out, seen});
    });
    static const CudaKernel pick(kPick, "pick");
    define_op("cpp_test::pick(Tensor x, int k) -> Tensor", [](OpBuilder& b) {
      PlanTensor x = b.tensor("x");
      if (x.dim() != 2 || x.dtype() != at::kFloat) b.refuse("x must be a 2-D float32 tensor");
      const IntExpr k = b.int_arg("k");
      b.check(k < x.size(1) && k >= -x.size(1), "k must index a column of x");
      const IntExpr column = b.holds(k < 0) ? k + x.size(1) : k;  // a branch on the argument: one plan per sign
      PlanTensor out = b.empty({x.size(0)}, at::kFloat);
      b.launch(pick, {ceil_div(x.size(0), 64)}, 64,
               {KernelArg::pointer(out), KernelArg::pointer(x), KernelArg::i64(x.stride(0)), KernelArg::i64(column),
                KernelArg::i64(x.size(0))});
      b.returns({out});
    });
    static const CudaKernel transpose(kTranspose, "transpose");
    define_op("cpp_test::transpose(Tensor x) -> Tensor", [](OpBuilder& b) {
      PlanTensor x = b.tensor("x");
      if (x.dim() != 2 || x.dtype() != at::kFloat) b.refuse("x must be a 2-D float32 tensor");
      b.check(x.is_contiguous(), "x must be contiguous");
      b.check(x.numel() < (int64_t(1) << 31), "x must have fewer than 2^31 elements");
      PlanTensor out = b.empty({x.size(1), x.size(0)}, at::kFloat);
      b.launch(transpose, {ceil_div(x.size(1), 16), ceil_div(x.size(0), 16)}, {16, 16},
               {KernelArg::pointer(out), KernelArg::pointer(x), KernelArg::i32(x.size(0)), KernelArg::i32(x.size(1))});
      b.returns({out});
    });
    static const CudaKernel layout_bits(kLayoutBits, "layout_bits", {}, Specialization::CuTile);
    define_op("cpp_test::layout_bits(Tensor x) -> Tensor", [](OpBuilder& b) {
      PlanTensor x = b.tensor("x");
      if (x.dim() != 2 || x.dtype() != at::kFloat) b.refuse("x must be a 2-D float32 tensor");
      PlanTensor out = b.empty({1}, at::kInt);
      b.launch(layout_bits, {1}, 1, {KernelArg::pointer(out), KernelArg::pointer(x)});
      b.returns({out});
    });
    static const CudaKernel broken("__global__ void broken(float* out) { out[0] = not_declared; }", "broken");
    define_op("cpp_test::broken(Tensor x) -> Tensor", [](OpBuilder& b) {
      PlanTensor out = b.empty_like(b.tensor("x"));
      b.launch(broken, {1}, 32, {KernelArg::pointer(out)});
      b.returns({out});
    });
    // Declares n an int where the kernel takes a long long: refused when the kernel is loaded.
    static const CudaKernel fill("__global__ void fill(float* out, long long n) { if (threadIdx.x < n) out[threadIdx.x] = 1; }",
                                 "fill");
    define_op("cpp_test::wrong_width(Tensor x) -> Tensor", [](OpBuilder& b) {
      PlanTensor out = b.empty_like(b.tensor("x"));
      b.launch(fill, {1}, 32, {KernelArg::pointer(out), KernelArg::i32(out.numel())});
      b.returns({out});
    });
    define_op("cpp_test::twice(Tensor x) -> (Tensor, Tensor)", [](OpBuilder& b) {
      PlanTensor out = b.empty_like(b.tensor("x"));
      b.returns({out, out});  // refused: one tensor returned twice
    });
  });
}

// Defines `schema` with a body that allocates like its first argument; the error message, or "".
std::string define_for_test(const std::string& schema) {
  try {
    define_op(schema, [](OpBuilder& b) { b.returns({b.empty_like(b.tensor("x"))}); });
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

}  // namespace

void bind_cpp_defined_ops(pybind11::module_& m) {
  m.def("define_cpp_test_ops", &define_cpp_test_ops,
        "Defines cpp_test::scale, cpp_test::pick, cpp_test::transpose (a 2-D block), cpp_test::layout_bits (cuTile's "
        "bits of x, as its variant saw them), cpp_test::broken (its kernel does not compile) and "
        "cpp_test::wrong_width (it declares a parameter narrower than the kernel) and cpp_test::twice (it returns "
        "one tensor twice) with the C++ API, once per process.");
  m.def("define_cpp_op", &define_for_test, pybind11::arg("schema"),
        "Defines an op from `schema` with the C++ API (a body that allocates like argument x): its error, or ''.");
}

}  // namespace torch_tile
