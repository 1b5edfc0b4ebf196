// A LibTorch program that runs tile ops with no Python in the process: it
// loads a bundle exported by ops.py, checks the ops against libtorch's own
// results, and shows the errors a call outside the bundle gets.
//
//   tile_example BUNDLE [--bench N]
//
// Exit status 0 when every check passes. Without a CUDA GPU it checks what it
// can: the bundle loads, the ops are registered with their schemas, and calls
// fail with clear errors.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <torch_tile/torch_tile.h>

#include "checks.h"

namespace {

using example::check;
using example::error_of;
using example::mapped;
using example::op;

bool close(const at::Tensor& got, const at::Tensor& expected) {
  return got.sizes() == expected.sizes() && got.dtype() == expected.dtype() &&
         at::allclose(got.to(at::kFloat), expected.to(at::kFloat), 1e-2, 1e-3);
}

void run_ops(int64_t bench_iters) {
  auto add = op("tile::add").typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  auto scale_rows = op("demo::scale_rows").typed<at::Tensor(const at::Tensor&, double)>();
  auto scaled_softmax = op("demo::scaled_softmax").typed<at::Tensor(const at::Tensor&, double)>();
  for (at::ScalarType dtype : {at::kFloat, at::kHalf}) {
    const std::string name = dtype == at::kFloat ? "float32" : "float16";
    at::Tensor a = at::randn({1000, 37}, at::device(at::kCUDA).dtype(dtype));
    at::Tensor b = at::randn({1000, 37}, at::device(at::kCUDA).dtype(dtype));
    check(close(add.call(a, b), a + b), "tile::add " + name + " matches at::add");
    check(close(scale_rows.call(a, 0.5), a * 0.5), "demo::scale_rows (autotuned) " + name + " matches a * 0.5");
    check(close(scaled_softmax.call(a, 2.0), at::softmax(a.to(at::kFloat), -1).to(dtype) * 2.0),
          "demo::scaled_softmax (two kernels) " + name + " matches at::softmax * 2");
    // Other sizes of the same case: the same plan, the same variants.
    at::Tensor c = at::randn({77, 37}, at::device(at::kCUDA).dtype(dtype));
    check(close(add.call(c, c), c + c), "tile::add " + name + " on another size");
  }
  at::Tensor d = at::randn({8, 8}, at::device(at::kCUDA).dtype(at::kDouble));
  const std::string miss = error_of([&] { add.call(d, d); });
  check(miss.find("no plan of the loaded bundles covers this call") != std::string::npos,
        "a float64 call, which the bundle has no plan for, is a clear error: " + miss.substr(0, miss.find('\n')));
  at::Tensor g = at::randn({4}, at::device(at::kCUDA)).requires_grad_(true);
  const std::string grad = error_of([&] { add.call(g, g); });
  check(grad.find("has no backward in this process") != std::string::npos,
        "a call needing a gradient is a clear error");
  if (bench_iters > 0) {
    at::Tensor x = at::randn({1024}, at::device(at::kCUDA));  // as benchmarks/launch_overhead.py
    for (int i = 0; i < 100; ++i) add.call(x, x);
    torch::cuda::synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < bench_iters; ++i) add.call(x, x);
    const auto stop = std::chrono::steady_clock::now();
    torch::cuda::synchronize();
    std::printf("bench tile::add us_per_call %.4f\n",
                std::chrono::duration<double, std::micro>(stop - start).count() / double(bench_iters));
  }
}

}  // namespace

int run(int argc, char** argv) {
  const int64_t bench_iters = (argc >= 4 && std::strcmp(argv[2], "--bench") == 0) ? std::atoll(argv[3]) : 0;
  std::printf("torch_tile %s\n", torch_tile::version());
  const torch_tile::LoadedBundle bundle = torch_tile::load_bundle(argv[1]);
  std::printf("loaded %zu ops, %lld plans, %lld variants (%s)\n", bundle.ops.size(), (long long)bundle.plans,
              (long long)bundle.variants, bundle.producer.c_str());
  check(!mapped("libpython"), "no libpython in the process");
  for (const char* name : {"tile::add", "demo::scale_rows", "demo::scaled_softmax"}) {
    const auto handle = c10::Dispatcher::singleton().findSchema({name, ""});
    check(handle.has_value() && handle->hasKernelForDispatchKey(c10::DispatchKey::CUDA),
          std::string(name) + " is registered with a CUDA kernel");
  }
  check(c10::toString(op("demo::scaled_softmax").schema()) ==
            "demo::scaled_softmax(Tensor x, float scale) -> Tensor",
        "schema of demo::scaled_softmax: " + c10::toString(op("demo::scaled_softmax").schema()));
  const std::string missing = error_of([] { torch_tile::load_bundle("/nonexistent.ttb"); });
  check(missing.find("cannot open") != std::string::npos, "a missing file is a clear error");
  const std::string corrupt = error_of([] { torch_tile::load_bundle_bytes("TTBUNDLE and then nothing valid"); });
  check(corrupt.find("bundle") != std::string::npos, "corrupt bytes are a clear error: " + corrupt);
  const std::string cpu = error_of([] {
    op("tile::add").typed<at::Tensor(const at::Tensor&, const at::Tensor&)>().call(at::ones({4}), at::ones({4}));
  });
  check(!cpu.empty(), "a call on CPU tensors is refused by the dispatcher (tile ops have CUDA kernels only)");
  const at::Tensor meta = op("demo::scaled_softmax")
                              .typed<at::Tensor(const at::Tensor&, double)>()
                              .call(at::empty({1000, 37}, at::TensorOptions().device(c10::kMeta)), 2.0);
  check(meta.is_meta() && meta.sizes() == at::IntArrayRef({1000, 37}),
        "a call on meta tensors returns the plan's output shape (shape propagation, no GPU)");
  if (torch::cuda::is_available()) {
    const std::string error = error_of([&] { run_ops(bench_iters); });
    check(error.empty(), "the GPU checks ran to the end" + (error.empty() ? "" : ": " + error));
  } else {
    std::printf("no CUDA GPU: ops not run\n");
  }
  std::printf("%s\n", example::failures() == 0 ? "ALL OK" : "FAILURES");
  return example::failures() == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s BUNDLE [--bench N]\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach a pipe as they are printed
  try {
    return run(argc, argv);
  } catch (const c10::Error& e) {  // a bundle that cannot be loaded (missing, corrupt, another version), ...
    std::fprintf(stderr, "error: %s\n", e.what_without_backtrace());
    return 1;
  }
}
