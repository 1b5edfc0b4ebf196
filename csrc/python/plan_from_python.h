// Converts the Python tracer's plan (plain dicts/lists/tuples) into a
// runtime LaunchPlan, and compile results into KernelBinary.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "../runtime/compiled_kernel.h"
#include "../runtime/launch_plan.h"

namespace torch_tile {

std::unique_ptr<LaunchPlan> plan_from_python(const pybind11::dict& plan);
KernelBinary binary_from_python(const pybind11::dict& result);
Expr expr_from_python(const pybind11::handle& code_and_text);

// One entry of a compile result's "tensor_maps" (Triton's tensordesc metadata).
TensorMapMeta tensor_map_from_python(const pybind11::handle& meta);

}  // namespace torch_tile
