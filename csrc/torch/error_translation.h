// Turns runtime errors into the c10 errors that Python sees as ValueError,
// TypeError, NotImplementedError or RuntimeError.
#pragma once

#include "../runtime/error.h"

namespace torch_tile {

[[noreturn]] void rethrow_as_torch_error(const Error& e);

}  // namespace torch_tile
