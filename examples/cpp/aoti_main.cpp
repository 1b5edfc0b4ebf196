// A LibTorch program that runs an AOTInductor package whose graph calls tile
// ops, with no Python in the process: the bundle registers the ops, then
// AOTInductor's package loader runs the model and its C++ calls them through
// the dispatcher. Files from examples/cpp/aoti_model.py.
//
//   tile_aoti PACKAGE.pt2 BUNDLE.ttb X.pt [Y.pt]
//
// Prints the output's agreement with Y.pt (the eager result) and exit status 0
// when it matches; without Y.pt it only runs the model. A failed load or run
// prints "error: " and the error's message, exit status 1.
#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/serialize.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <torch_tile/torch_tile.h>

namespace {

at::Tensor read_tensor(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  TORCH_CHECK(file, "tile_aoti: cannot open ", path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes).toTensor();
}

bool libpython_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libpython") != std::string::npos) return true;
  }
  return false;
}

int run(int argc, char** argv) {
  const torch_tile::LoadedBundle bundle = torch_tile::load_bundle(argv[2]);
  std::printf("bundle: %zu ops, %lld variants\n", bundle.ops.size(), (long long)bundle.variants);
  torch::inductor::AOTIModelPackageLoader loader(argv[1]);
  const std::string device = loader.get_metadata()["AOTI_DEVICE_KEY"];
  std::printf("package loaded (device %s)\n", device.c_str());
  const at::Tensor x = read_tensor(argv[3]).to(c10::Device(device));
  const std::vector<at::Tensor> outputs = loader.run({x});
  std::printf("ran: %zu output(s), libpython mapped: %s\n", outputs.size(), libpython_mapped() ? "yes" : "no");
  if (argc < 5) return 0;
  const at::Tensor expected = read_tensor(argv[4]);
  const at::Tensor got = outputs.at(0).cpu();
  const bool same = got.sizes() == expected.sizes() && at::allclose(got, expected, 1e-4, 1e-5);
  std::printf("max |output - eager| = %.3g: %s\n", (got - expected).abs().max().item<double>(),
              same ? "same as eager" : "DIFFERENT from eager");
  return same && !libpython_mapped() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s PACKAGE.pt2 BUNDLE.ttb X.pt [Y.pt]\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(argc, argv);
  } catch (const c10::Error& e) {
    std::printf("error: %s\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {  // AOTInductor's runner rethrows an op's error as std::runtime_error
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
