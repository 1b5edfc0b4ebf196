// C++ loops for the launch-overhead benchmark: a LibTorch-style caller going
// through the dispatcher, and the bare cuLaunchKernelEx floor.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_benchmarks(pybind11::module_& m);

}  // namespace torch_tile
