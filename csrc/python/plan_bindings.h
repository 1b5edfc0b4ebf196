// The plan format in Python: its kinds and codes (py::enum_ over the C++
// enums) and its structures (LaunchPlan, LaunchStep, Binding, ...), which the
// tracer builds directly, so no table or field layout is written twice.
#pragma once

#include <pybind11/pybind11.h>

#include "runtime/plan/plan_serialization.h"

namespace torch_tile {

void bind_plan_format(pybind11::module_& m);

// An op's serialized signature and plans as a dict: qualname, schema, arg_kinds, num_returns, plans.
pybind11::dict op_plans_to_python(const OpPlans& op);

}  // namespace torch_tile
