// Bundles from Python: export (the ops' plans and the variants this process
// compiled, plus variants compiled ahead of time), read (for inspect and
// verify), load (the C++ loader), and the dry run that finds which variants a
// call needs.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_bundles(pybind11::module_& m);

}  // namespace torch_tile
