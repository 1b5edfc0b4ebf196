// Defining ops and registering their kernels: splitting "namespace::name" (a name
// may carry an overload: "namespace::name.overload", as torch.library's),
// and torch::Library objects that live as long as the process (the
// dispatcher outlives static destruction).
#pragma once

#include <torch/library.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace torch_tile {

struct OpName {
  std::string ns;
  std::string name;
};

// "ns::name" -> {ns, name}; anything else is a clear ValueError. `name` keeps
// the overload ("name.overload"), as torch::Library's def and impl take it.
OpName split_op_name(const std::string& qualname);

// The defined op "ns::name" or "ns::name.overload" (its overload ""
// or "overload"); a clear error if it is not defined.
c10::OperatorHandle defined_op(const std::string& qualname);
// Its dispatcher name: {"ns::name", "overload"}.
c10::OperatorName operator_name(const std::string& qualname);

// A new library of `kind` (IMPL, or FRAGMENT to define ops) for namespace `ns`
// (and dispatch key, when given), kept alive for the process. Thread-safe.
torch::Library& new_library(torch::Library::Kind kind, const std::string& ns, std::optional<c10::DispatchKey> key);

// Calls `add(library, name)` with a new fragment for the op's namespace.
template <class Add>
void with_impl_library(const std::string& qualname, std::optional<c10::DispatchKey> key, Add add) {
  const OpName op = split_op_name(qualname);
  add(new_library(torch::Library::IMPL, op.ns, key), op.name.c_str());
}

// Per-op state by qualname, one table per state type for the process (never
// destroyed: kernels may run during static teardown). Thread-safe.
template <class T>
class OpTable {
 public:
  static OpTable& instance() {
    static OpTable* table = new OpTable();
    return *table;
  }
  void put(const std::string& qualname, std::shared_ptr<T> value) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[qualname] = std::move(value);
  }
  // The entry for `qualname`, or nullptr.
  std::shared_ptr<T> find(const std::string& qualname) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(qualname);
    return it == entries_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<T>> entries_;
};

}  // namespace torch_tile
