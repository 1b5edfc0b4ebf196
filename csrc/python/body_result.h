// What an op body run in Python returned (a fallback call's, the CPU path's), as the op returns it: one check
// of the value against the schema's returns for every path, in C++ so that a fallback call converts it once.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "../torch/native_op.h"

namespace torch_tile {

// The tensors `result` holds, one per schema return (a Tensor[] return's items), owned as the native path owns
// them (NativeOp::own_outputs); `in`: the op's arguments. A value the schema does not return raises the
// Python OpDefinitionError naming the op, as torch.library refuses it too.
std::vector<at::Tensor> body_outputs(const NativeOp& op, pybind11::handle result, const c10::IValue* in);

// `outputs` as the Python paths return them: a list for a Tensor[] return, a tensor, a tuple, or None.
pybind11::object outputs_to_python(const NativeOp& op, std::vector<at::Tensor> outputs);

}  // namespace torch_tile
