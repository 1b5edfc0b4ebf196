// A registered tile op by name, for Python-facing bindings: an unknown name
// is a ValueError naming it.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "../torch/native_op.h"

namespace torch_tile {

inline std::shared_ptr<NativeOp> op_named(const std::string& qualname) {
  std::shared_ptr<NativeOp> op = find_native_op(qualname);
  if (!op) throw pybind11::value_error("no tile op named " + qualname);
  return op;
}

}  // namespace torch_tile
