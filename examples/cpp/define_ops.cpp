// A LibTorch program that defines tile ops in C++ over CUDA C++ kernels
// (torch_tile/op_definition.h), with no Python anywhere, and checks them
// against libtorch's own results.
//
//   tile_define_ops SOFTMAX_CU
//
// SOFTMAX_CU: torch_tile/kernels/softmax.cu (the kernel of tile::softmax_cuda),
// loaded from its file. Exit status 0 when every check passes. Without a CUDA
// GPU it checks what needs none: the schemas, the Meta implementation (shapes
// from the plans), the serialized plans and the errors.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/cuda.h>

#include <cstdio>
#include <string>

#include <torch_tile/op_definition.h>
#include <torch_tile/torch_tile.h>

#include "checks.h"

namespace tt = torch_tile;

namespace {

using example::check;
using example::error_of;
using example::mapped;
using example::op;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// out[i] = x[i] * alpha, any float dtype (T: a template argument from the tensor's dtype).
const char* kScaleSource = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <typename T>
__global__ void scale(T* out, const T* x, float alpha, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = T(float(x[i]) * alpha);
}
)";

// out[r, c] = x[r, c] + bias[c] (bias may be absent: HAS_BIAS), rows of any stride.
const char* kBiasSource = R"(
template <bool HAS_BIAS>
__global__ void add_bias(float* out, const float* x, const float* bias, long long row_stride, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float v = x[blockIdx.y * row_stride + c];
  if (HAS_BIAS) v += bias[c];
  out[(long long)blockIdx.y * cols + c] = v;
}
)";

void define_ops(const std::string& softmax_cu) {
  static const tt::CudaKernel scale(kScaleSource, "scale");
  tt::define_op("cppdemo::scale(Tensor x, float alpha) -> Tensor", [](tt::OpBuilder& b) {
    tt::PlanTensor x = b.tensor("x");
    b.check(x.is_contiguous(), "x must be contiguous");
    tt::PlanTensor out = b.empty_like(x);
    const tt::IntExpr n = x.numel();
    b.launch(scale, {tt::ceil_div(n, 256)}, 256,
             {tt::KernelArg::pointer(out), tt::KernelArg::pointer(x), tt::KernelArg::f32(b.float_arg("alpha")),
              tt::KernelArg::i64(n)},
             tt::LaunchOptions{{tt::cuda_type(x.dtype())}});
    b.returns({out});
  });

  static const tt::CudaKernel bias_kernel(kBiasSource, "add_bias");
  tt::define_op("cppdemo::add_bias(Tensor x, Tensor? bias=None) -> Tensor", [](tt::OpBuilder& b) {
    tt::PlanTensor x = b.tensor("x");
    if (x.dim() != 2 || x.dtype() != at::kFloat) b.refuse("x must be a 2-D float32 tensor");
    b.check(x.stride(1) == 1, "x's rows must be contiguous");
    const bool has_bias = !b.is_none("bias");
    tt::PlanTensor bias = has_bias ? b.tensor("bias") : x;  // a pointer the kernel does not read
    if (has_bias) b.check(bias.numel() == x.size(1) && bias.stride(0) == 1, "bias must be (cols,), contiguous");
    tt::PlanTensor out = b.empty({x.size(0), x.size(1)}, at::kFloat);
    b.launch(bias_kernel, {tt::ceil_div(x.size(1), 128), x.size(0)}, 128,
             {tt::KernelArg::pointer(out), tt::KernelArg::pointer(x), tt::KernelArg::pointer(bias),
              tt::KernelArg::i64(x.stride(0)), tt::KernelArg::i32(x.size(1))},
             tt::LaunchOptions{{has_bias ? "true" : "false"}});
    b.returns({out});
  });

  // The kernel of tile::softmax_cuda, read from its .cu file; a branch on the row length picks the block.
  static const tt::CudaKernel softmax_rows = tt::CudaKernel::from_file(softmax_cu, "softmax_rows");
  tt::define_op("cppdemo::softmax(Tensor x) -> Tensor", [](tt::OpBuilder& b) {
    tt::PlanTensor x = b.tensor("x");
    if (x.dim() != 2) b.refuse("x must be 2-D");
    b.check(x.stride(1) == 1 || x.size(1) <= 1, "x's rows must be contiguous");
    tt::PlanTensor out = b.empty({x.size(0), x.size(1)}, x.dtype());
    const int block = b.holds(x.size(1) <= 2048) ? 128 : 256;
    const std::string acc = x.dtype() == at::kDouble ? "double" : "float";
    b.launch(softmax_rows, {x.size(0)}, block,
             {tt::KernelArg::pointer(out), tt::KernelArg::pointer(x), tt::KernelArg::i64(x.stride(0)),
              tt::KernelArg::i64(out.stride(0)), tt::KernelArg::i32(x.size(1))},
             tt::LaunchOptions{{tt::cuda_type(x.dtype()), acc, std::to_string(block)}});
    b.returns({out});
  });
}


void check_without_gpu() {
  auto scale = op("cppdemo::scale").typed<at::Tensor(const at::Tensor&, double)>();
  auto softmax = op("cppdemo::softmax").typed<at::Tensor(const at::Tensor&)>();
  auto add_bias = op("cppdemo::add_bias").typed<at::Tensor(const at::Tensor&, const std::optional<at::Tensor>&)>();
  check(op("cppdemo::add_bias").schema().arguments().size() == 2, "cppdemo::add_bias is defined with its schema");
  // Meta: the plans give the shapes, with no GPU and no kernel compiled.
  const at::Tensor m = at::empty({5, 3000}, at::device(at::kMeta).dtype(at::kHalf));
  const at::Tensor s = softmax.call(m);
  check(s.is_meta() && s.sizes() == m.sizes() && s.dtype() == at::kHalf, "softmax on meta tensors: shape and dtype");
  check(scale.call(m, 2.0).sizes() == m.sizes(), "scale on meta tensors");
  const at::Tensor mx = at::empty({4, 7}, at::device(at::kMeta));
  check(add_bias.call(mx, std::nullopt).sizes() == mx.sizes(), "add_bias without bias on meta tensors");
  check(add_bias.call(mx, at::empty({7}, at::device(at::kMeta))).sizes() == mx.sizes(), "add_bias with bias on meta");
  const std::string plans = tt::export_plans("cppdemo::add_bias");
  check(plans.rfind("TTPLANS", 0) == 0, "add_bias's plans serialize (two cases: with and without bias)");
  const std::string refused = error_of([&] { scale.call(m.t(), 2.0); });
  check(contains(refused, "cppdemo::scale: x must be contiguous"), "check() refuses with the op and the message");
  const std::string bad_bias = error_of([&] { add_bias.call(mx, at::empty({6}, at::device(at::kMeta))); });
  check(contains(bad_bias, "bias must be (cols,)"), "a bias of the wrong length is refused");
  const std::string rank = error_of([&] { softmax.call(at::empty({3}, at::device(at::kMeta))); });
  check(contains(rank, "cppdemo::softmax: x must be 2-D"), "refuse() names the op and the reason");
  const std::string redefined = error_of([] { tt::define_op("cppdemo::scale(Tensor x) -> Tensor", [](tt::OpBuilder&) {}); });
  check(contains(redefined, "already defined"), "defining an op twice is refused");
}

bool close(const at::Tensor& got, const at::Tensor& expected, double rtol, double atol) {
  return got.sizes() == expected.sizes() && got.dtype() == expected.dtype() &&
         at::allclose(got.to(at::kDouble), expected.to(at::kDouble), rtol, atol);
}

void check_on_gpu() {
  auto scale = op("cppdemo::scale").typed<at::Tensor(const at::Tensor&, double)>();
  auto softmax = op("cppdemo::softmax").typed<at::Tensor(const at::Tensor&)>();
  auto add_bias = op("cppdemo::add_bias").typed<at::Tensor(const at::Tensor&, const std::optional<at::Tensor>&)>();
  const auto cuda = at::device(at::kCUDA);
  for (at::ScalarType dtype : {at::kFloat, at::kHalf, at::kBFloat16}) {
    const at::Tensor x = at::randn({1000, 37}, cuda.dtype(dtype));
    check(close(scale.call(x, 1.5), (x.to(at::kFloat) * 1.5).to(dtype), 1e-2, 1e-2),
          std::string("scale matches x * alpha, ") + c10::toString(dtype));
  }
  for (int64_t cols : {1, 100, 2048, 2049, 5000}) {
    for (at::ScalarType dtype : {at::kFloat, at::kHalf, at::kDouble}) {
      const at::Tensor x = at::randn({33, cols}, cuda.dtype(dtype));
      const double tol = dtype == at::kHalf ? 2e-3 : 1e-5;
      check(close(softmax.call(x), at::softmax(x.to(at::kFloat), -1).to(dtype), tol, tol),
            "softmax matches at::softmax, " + std::to_string(cols) + " columns, " + c10::toString(dtype));
    }
  }
  const at::Tensor wide = at::randn({6, 64}, cuda);
  const at::Tensor x = wide.narrow(1, 3, 50);  // rows of stride 64
  const at::Tensor bias = at::randn({50}, cuda);
  check(close(add_bias.call(x, bias), x + bias, 1e-6, 1e-6), "add_bias with a bias, strided rows");
  check(close(add_bias.call(x, std::nullopt), x.contiguous(), 0, 0), "add_bias without a bias");
  const std::string grad = error_of([&] { scale.call(at::randn({4}, cuda).requires_grad_(true), 2.0); });
  check(contains(grad, "defined in C++"), "a call needing a gradient is refused, naming why");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SOFTMAX_CU\n", argv[0]);
    return 2;
  }
  define_ops(argv[1]);
  check(!mapped("libpython"), "no libpython in the process");
  check_without_gpu();
  if (torch::cuda::is_available()) {
    check_on_gpu();
  } else {
    std::printf("skip GPU checks: no CUDA device\n");
  }
  std::printf("%s\n", example::failures() == 0 ? "all checks passed" : "some checks FAILED");
  return example::failures() == 0 ? 0 : 1;
}
