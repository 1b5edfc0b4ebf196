// C++ that takes the GIL while the interpreter may be exiting. CPython before
// 3.14 ends a thread that takes the GIL during finalization (a daemon thread
// still compiling or tracing at exit) with pthread_exit, whose forced
// unwinding runs the C++ destructors on its way without the GIL (a pybind11
// object's decref, gil_scoped_acquire's release, torch's Python kernel): the
// process aborts. Where torch_tile's C++ takes the GIL or calls Python, these
// park such a thread instead, as CPython 3.14 does: it never runs again, and
// the exiting process ends it.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

namespace torch_tile {

#define TORCH_TILE_EXIT_HIDDEN __attribute__((visibility("hidden")))

// Whether the interpreter is finalizing (then no Python object may be touched from another thread).
bool python_finalizing();

// Holds the GIL for its scope (reentrant, like pybind11's gil_scoped_acquire).
class TORCH_TILE_EXIT_HIDDEN GilAcquire {
 public:
  GilAcquire();
  GilAcquire(const GilAcquire&) = delete;
  GilAcquire& operator=(const GilAcquire&) = delete;

 private:
  std::optional<pybind11::gil_scoped_acquire> gil_;
};

// Releases the GIL for its scope (the GIL must be held), taking it back at the end.
class GilRelease {
 public:
  GilRelease();
  ~GilRelease();
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

 private:
  PyThreadState* state_;
};

// `fn(*args)` (GIL held); a Python error is thrown as pybind11::error_already_set.
pybind11::object call_python(pybind11::handle fn, pybind11::handle args);

}  // namespace torch_tile
