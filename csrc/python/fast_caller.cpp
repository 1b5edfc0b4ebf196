#include "fast_caller.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../torch/op_library.h"
#include "interpreter_exit.h"
#include "op_named.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

struct FastCaller {
  c10::OperatorHandle op;
  std::string qualname;
  std::vector<ArgKind> kinds;
  std::vector<std::string> names;
  size_t num_returns;
  bool returns_list;   // one Tensor[] return
  PyObject* fallback;  // torch's own entry (owned reference)
};

const char* const kCapsuleName = "torch_tile.FastCaller";

void destroy_caller(PyObject* capsule) {
  auto* caller = static_cast<FastCaller*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  Py_XDECREF(caller->fallback);
  delete caller;
}

// Appends the argument to the stack; false when it needs torch's generic path. `cuda`: set when it holds a CUDA
// tensor.
bool push_argument(torch::jit::Stack& stack, ArgKind kind, PyObject* obj, bool& cuda) {
  if (is_optional(kind)) {
    if (obj == Py_None) {
      stack.emplace_back();
      return true;
    }
    kind = value_kind(kind);
  }
  switch (kind) {
    case ArgKind::Tensor:
      // Exactly torch.Tensor (or Parameter): subclasses may override __torch_function__.
      if (!THPVariable_CheckExact(obj)) return false;
      stack.emplace_back(THPVariable_Unpack(obj));
      cuda = cuda || stack.back().toTensor().is_cuda();
      return true;
    case ArgKind::Int: {
      if (!PyLong_CheckExact(obj)) return false;
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
      if (overflow != 0) return false;
      stack.emplace_back(int64_t(v));
      return true;
    }
    case ArgKind::Float:
      if (!PyFloat_CheckExact(obj)) return false;
      stack.emplace_back(PyFloat_AS_DOUBLE(obj));
      return true;
    case ArgKind::Bool:
      if (!PyBool_Check(obj)) return false;
      stack.emplace_back(obj == Py_True);
      return true;
    case ArgKind::String: {
      if (!PyUnicode_CheckExact(obj)) return false;
      Py_ssize_t size = 0;
      const char* data = PyUnicode_AsUTF8AndSize(obj, &size);
      if (data == nullptr) {
        PyErr_Clear();
        return false;
      }
      stack.emplace_back(std::string(data, size_t(size)));
      return true;
    }
    case ArgKind::TensorList: {
      if (!PyList_CheckExact(obj) && !PyTuple_CheckExact(obj)) return false;
      const Py_ssize_t size = PySequence_Fast_GET_SIZE(obj);
      PyObject** items = PySequence_Fast_ITEMS(obj);
      c10::List<at::Tensor> list;
      list.reserve(size_t(size));
      for (Py_ssize_t k = 0; k < size; ++k) {
        if (!THPVariable_CheckExact(items[k])) return false;
        list.push_back(THPVariable_Unpack(items[k]));
        cuda = cuda || list.get(k).is_cuda();
      }
      stack.emplace_back(std::move(list));
      return true;
    }
    default: return false;  // dtypes: torch's parser
  }
}

// torch's argument parser reads None as False for a bool (pybind11's bool
// conversion) and as an undefined tensor for a Tensor; a scalar argument
// given None is refused here, before it can be read as a value.
bool refuse_none_scalars(const FastCaller& c, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) {
    if (args[i] != Py_None) continue;
    size_t index = size_t(i);
    if (i >= nargs) {
      const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i - nargs));
      if (name == nullptr) return true;
      index = size_t(std::find(c.names.begin(), c.names.end(), name) - c.names.begin());
    }
    if (index >= c.kinds.size()) continue;  // torch's parser reports unknown or extra arguments
    const ArgKind kind = c.kinds[index];
    if (kind == ArgKind::Int || kind == ArgKind::Float || kind == ArgKind::Bool || kind == ArgKind::String ||
        kind == ArgKind::Dtype) {
      const char* expected = kind == ArgKind::Int     ? "an int"
                             : kind == ArgKind::Float ? "a float"
                             : kind == ArgKind::Bool  ? "a bool"
                             : kind == ArgKind::String ? "a str"
                                                       : "a torch.dtype";
      PyErr_Format(PyExc_TypeError, "%s: argument '%s' expected %s, got None", c.qualname.c_str(),
                   c.names[index].c_str(), expected);
      return true;
    }
  }
  return false;
}

PyObject* call_fallback(FastCaller& c, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  if (refuse_none_scalars(c, args, PyVectorcall_NARGS(nargsf), kwnames)) return nullptr;
  return PyObject_Vectorcall(c.fallback, args, nargsf, kwnames);
}

PyObject* fast_call(PyObject* capsule, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  FastCaller& c = *static_cast<FastCaller*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames != nullptr || size_t(nargs) != c.kinds.size() || at::impl::torch_function_mode_enabled()) {
    return call_fallback(c, args, nargsf, kwnames);
  }
  // A per-thread stack, reused so the steady state allocates nothing here. A
  // nested call on the same thread (a Python dispatch mode calling the op
  // again) takes a local one instead.
  thread_local torch::jit::Stack reusable;
  thread_local bool reusable_in_use = false;
  torch::jit::Stack local;
  const bool reuse = !reusable_in_use;
  torch::jit::Stack& stack = reuse ? reusable : local;
  struct Release {
    bool active;
    torch::jit::Stack& stack;
    ~Release() {
      if (active) {
        stack.clear();
        reusable_in_use = false;
      }
    }
  } release{reuse, stack};
  reusable_in_use = true;
  stack.clear();
  bool cuda = false;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (!push_argument(stack, c.kinds[size_t(i)], args[i], cuda)) return call_fallback(c, args, nargsf, kwnames);
  }
  {
    // The native kernel (CUDA tensors) runs without the GIL: a cache miss may wait for another thread that is
    // compiling (and needs the GIL). The other kernels are Python's (CPU, Meta), which would take it back at
    // once; torch's way in to them must not be where a thread ends at interpreter exit (interpreter_exit.h).
    std::optional<GilRelease> no_gil;
    if (cuda) no_gil.emplace();
    c.op.callBoxed(stack);
  }
  if (c.num_returns == 0) Py_RETURN_NONE;
  if (c.returns_list) {
    const c10::List<at::Tensor> outputs = std::move(stack[0]).toTensorList();
    PyObject* list = PyList_New(Py_ssize_t(outputs.size()));
    if (list == nullptr) return nullptr;
    for (size_t i = 0; i < outputs.size(); ++i) {
      PyObject* item = THPVariable_Wrap(outputs.get(i));
      if (item == nullptr) {
        Py_DECREF(list);
        return nullptr;
      }
      PyList_SET_ITEM(list, Py_ssize_t(i), item);
    }
    return list;
  }
  if (c.num_returns == 1) return THPVariable_Wrap(std::move(stack[0]).toTensor());
  PyObject* tuple = PyTuple_New(Py_ssize_t(c.num_returns));
  if (tuple == nullptr) return nullptr;
  for (size_t i = 0; i < c.num_returns; ++i) {
    PyTuple_SET_ITEM(tuple, Py_ssize_t(i), THPVariable_Wrap(std::move(stack[i]).toTensor()));
  }
  return tuple;
  END_HANDLE_TH_ERRORS
}

PyMethodDef kFastCallDef = {"tile_op_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_call)),
                            METH_FASTCALL | METH_KEYWORDS, "Calls a tile op through c10::Dispatcher."};

py::object make_fast_caller(const std::string& qualname, py::object fallback) {
  const std::shared_ptr<NativeOp> native_op = op_named(qualname);
  auto* caller = new FastCaller{defined_op(qualname), qualname,
                                native_op->arg_kinds(), native_op->arg_names(), size_t(native_op->num_returns()),
                                native_op->returns_list(), fallback.release().ptr()};
  py::object capsule = py::reinterpret_steal<py::object>(PyCapsule_New(caller, kCapsuleName, destroy_caller));
  if (!capsule) {
    Py_XDECREF(caller->fallback);
    delete caller;
    throw py::error_already_set();
  }
  PyObject* fn = PyCFunction_NewEx(&kFastCallDef, capsule.ptr(), nullptr);
  if (fn == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

}  // namespace

void bind_fast_caller(py::module_& m) {
  m.def("fast_caller", &make_fast_caller, py::arg("qualname"), py::arg("fallback"),
        "A callable running the tile op through the dispatcher with direct argument conversion; "
        "`fallback` (torch's own entry) serves every call it does not handle.");
}

}  // namespace torch_tile
