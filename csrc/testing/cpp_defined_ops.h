// Ops defined through the public C++ API (torch_tile/op_definition.h), for the
// Python tests of that API: torch_tile._C.testing.define_cpp_test_ops().
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_cpp_defined_ops(pybind11::module_& m);

}  // namespace torch_tile
