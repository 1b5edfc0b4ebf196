// CUDA C++ compiled with NVRTC, from Python (the CUDA C++ frontend's compiler).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_nvrtc(pybind11::module_& m);

}  // namespace torch_tile
