// torch_tile's C++ API, for LibTorch programs: load a bundle exported from
// Python (torch_tile.export_bundle, or `python -m torch_tile.bundle export`)
// and call its tile ops like any operator, through c10::Dispatcher, with no
// Python in the process.
//
//   #include <torch_tile/torch_tile.h>
//   torch_tile::LoadedBundle b = torch_tile::load_bundle("ops.ttb");
//   auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tile::add", "").typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
//   at::Tensor out = op.call(x, y);
//
// Link with the torch_tile CMake package (find_package(torch_tile)), which
// brings LibTorch too. Errors are c10::Error (ValueError-like ones as
// c10::ValueError), each naming the op, the guard or key and what to add to
// the bundle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torch_tile {

// What one load_bundle call registered.
struct LoadedBundle {
  std::string producer;          // the versions that exported it
  std::vector<std::string> ops;  // "namespace::name" of each op, now callable
  int64_t plans = 0;             // launch plans installed (one per traced case)
  int64_t variants = 0;          // compiled variants made available (all architectures)
};

// Registers the bundle's ops with the dispatcher (CUDA kernels; an op this
// process already has, e.g. defined from Python, gets the bundle's plans
// instead) and makes its compiled variants available to every op. A call that
// no plan covers, or whose kernel variant the bundle lacks for the device's
// architecture, is a c10::Error naming what to export. Thread-safe.
LoadedBundle load_bundle(const std::string& path);

// As load_bundle, from the file's bytes.
LoadedBundle load_bundle_bytes(const std::string& bytes);

// The torch_tile version this library was built as.
const char* version();

}  // namespace torch_tile
