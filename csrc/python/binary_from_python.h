// Converts a frontend's compile result (a dict: Triton's launch metadata,
// the cubin and how the kernel takes its parameters) into a KernelBinary.
#pragma once

#include <pybind11/pybind11.h>

#include "runtime/kernels/compiled_kernel.h"

namespace torch_tile {

KernelBinary binary_from_python(const pybind11::dict& result);

// Bytes of each parameter type a compile result may name ("*": any pointer).
pybind11::dict param_type_bytes_by_name();

// One entry of a compile result's "tensor_maps" (Triton's tensordesc metadata).
TensorMapMeta tensor_map_from_python(const pybind11::handle& meta);

}  // namespace torch_tile
