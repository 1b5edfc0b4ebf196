// Computes a plan's specialization keys for given arguments without a GPU:
// the same C++ code the launch path runs, fed from tensor metadata only.
// Used by tests (keys vs Triton's own binder) and the CPU demo (compile-only).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_key_probe(pybind11::module_& m);

}  // namespace torch_tile
