// The tensor-map (TMA descriptor) encoding of the launch path, callable from
// Python without a GPU: tests check the parameters handed to
// cuTensorMapEncodeTiled, the validation errors and the per-thread cache (with
// a fake driver).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_tensor_map_probe(pybind11::module_& m);

}  // namespace torch_tile
