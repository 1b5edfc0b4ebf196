#include "error_translation.h"

#include <c10/util/Exception.h>

namespace torch_tile {

void rethrow_as_torch_error(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::Value: C10_THROW_ERROR(ValueError, e.what());
    case ErrorKind::Type: C10_THROW_ERROR(TypeError, e.what());
    case ErrorKind::NotImplemented: C10_THROW_ERROR(NotImplementedError, e.what());
    case ErrorKind::Runtime: break;
  }
  C10_THROW_ERROR(Error, e.what());
}

}  // namespace torch_tile
