#include "body_result.h"

#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <string>

namespace py = pybind11;

namespace torch_tile {
namespace {

[[noreturn]] void refuse(const NativeOp& op, const std::string& message) {
  const py::object error = py::module_::import("torch_tile._errors").attr("OpDefinitionError");
  PyErr_SetString(error.ptr(), (op.qualname() + ": " + message).c_str());
  throw py::error_already_set();
}

std::string type_name(py::handle value) { return py::str(py::type::of(value).attr("__name__")); }

bool is_sequence(py::handle value) { return PyList_Check(value.ptr()) || PyTuple_Check(value.ptr()); }

}  // namespace

std::vector<at::Tensor> body_outputs(const NativeOp& op, py::handle result, const c10::IValue* in) {
  std::vector<py::handle> items;  // borrowed from `result`, which the caller holds
  const auto take_items = [&] { for (py::handle item : result) items.push_back(item); };
  if (op.returns_list()) {
    if (!is_sequence(result)) refuse(op, "the schema returns Tensor[]; the body returned " + type_name(result));
    take_items();
  } else if (op.num_returns() == 0) {
    if (!result.is_none()) refuse(op, "the schema returns nothing; the body returned " + type_name(result));
    return {};
  } else {
    if (is_sequence(result)) {
      take_items();
    } else {
      items.push_back(result);
    }
    if (int(items.size()) != op.num_returns()) {
      refuse(op, "the body returned " + std::to_string(items.size()) + " value(s); the schema declares " +
                     std::to_string(op.num_returns()));
    }
  }
  std::vector<at::Tensor> outputs;
  outputs.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (op.gradient_op() && items[i].is_none()) {  // no gradient for that argument
      outputs.emplace_back();
      continue;
    }
    if (!THPVariable_Check(items[i].ptr())) {
      refuse(op, "return " + std::to_string(i) + " of the body is " + type_name(items[i]) + ", not a Tensor");
    }
    outputs.push_back(THPVariable_Unpack(items[i].ptr()));
  }
  if (!op.gradient_op()) op.own_outputs(outputs, in);  // a gradient op's are the gradients themselves
  return outputs;
}

py::object outputs_to_python(const NativeOp& op, std::vector<at::Tensor> outputs) {
  if (op.returns_list()) return py::cast(outputs);
  if (op.num_returns() == 0) return py::none();
  if (op.num_returns() == 1) return py::cast(std::move(outputs[0]));
  return py::tuple(py::cast(std::move(outputs)));
}

}  // namespace torch_tile
