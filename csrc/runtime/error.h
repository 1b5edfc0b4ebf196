// Errors raised by the runtime. The torch binding maps each kind onto the
// matching c10 error, so Python sees ValueError / TypeError / RuntimeError.
#pragma once

#include <stdexcept>
#include <string>

namespace torch_tile {

enum class ErrorKind {
  Value,           // a bad value: size, device, overflow, grid
  Type,            // a bad type: dtype, rank, argument kind
  NotImplemented,  // something the runtime cannot do (yet)
  Runtime,         // driver, compiler or internal failures
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void fail(ErrorKind kind, const std::string& message) {
  throw Error(kind, message);
}

}  // namespace torch_tile
