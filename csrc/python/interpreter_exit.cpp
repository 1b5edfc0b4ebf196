#include "interpreter_exit.h"

#include <cxxabi.h>
#include <unistd.h>

namespace py = pybind11;

namespace torch_tile {
namespace {

// The thread's forced unwinding stops here for good: the exiting process ends it.
[[noreturn]] void park_thread() {
  for (;;) pause();
}

}  // namespace

bool python_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

GilAcquire::GilAcquire() {
  try {
    gil_.emplace();
  } catch (abi::__forced_unwind&) {
    park_thread();
  }
}

GilRelease::GilRelease() : state_(PyEval_SaveThread()) {}

GilRelease::~GilRelease() {
  try {
    PyEval_RestoreThread(state_);
  } catch (abi::__forced_unwind&) {
    park_thread();
  }
}

py::object call_python(py::handle fn, py::handle args) {
  PyObject* result = nullptr;
  try {
    result = PyObject_Call(fn.ptr(), args.ptr(), nullptr);
  } catch (abi::__forced_unwind&) {  // ended in Python code, which runs no C++ destructor on the way here
    park_thread();
  }
  if (result == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

}  // namespace torch_tile
