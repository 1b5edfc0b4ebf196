// torch_tile._C.testing: benchmarks and probes, kept out of the binding
// proper (csrc/python) so that the launch path's internals need not be public.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_testing(pybind11::module_& parent);

}  // namespace torch_tile
