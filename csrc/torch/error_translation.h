// Turns runtime errors into the c10 errors that Python sees as ValueError,
// TypeError, NotImplementedError or RuntimeError.
#pragma once

#include "runtime/error.h"

namespace torch_tile {

[[noreturn]] void rethrow_as_torch_error(const Error& e);

// Runs `fn`; a runtime Error it throws becomes the matching torch error.
template <class Fn>
decltype(auto) translating_errors(Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    rethrow_as_torch_error(e);
  }
}

}  // namespace torch_tile
