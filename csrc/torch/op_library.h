// Registering kernels for ops defined elsewhere (by torch_tile's Python layer):
// splitting "namespace::name", and torch::Library fragments that live as long
// as the process (the dispatcher outlives static destruction).
#pragma once

#include <torch/library.h>

#include <optional>
#include <string>

namespace torch_tile {

struct OpName {
  std::string ns;
  std::string name;
};

// "ns::name" -> {ns, name}; anything else is a clear ValueError.
OpName split_op_name(const std::string& qualname);

// A new IMPL fragment for namespace `ns` (and dispatch key, when given), kept
// alive for the process. Thread-safe.
torch::Library& new_impl_library(const std::string& ns, std::optional<c10::DispatchKey> key);

// Calls `add(library, name)` with a new fragment for the op's namespace.
template <class Add>
void with_impl_library(const std::string& qualname, std::optional<c10::DispatchKey> key, Add add) {
  const OpName op = split_op_name(qualname);
  add(new_impl_library(op.ns, key), op.name.c_str());
}

}  // namespace torch_tile
