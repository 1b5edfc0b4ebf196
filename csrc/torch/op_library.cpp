#include "op_library.h"

#include <memory>
#include <mutex>
#include <vector>

#include "runtime/error.h"

namespace torch_tile {

OpName split_op_name(const std::string& qualname) {
  const size_t sep = qualname.find("::");
  if (sep == std::string::npos) fail(ErrorKind::Value, "op name must be 'namespace::name', got '" + qualname + "'");
  return OpName{qualname.substr(0, sep), qualname.substr(sep + 2)};
}

c10::OperatorName operator_name(const std::string& qualname) {
  const size_t dot = qualname.find('.', split_op_name(qualname).ns.size() + 2);
  if (dot == std::string::npos) return c10::OperatorName(qualname, "");
  return c10::OperatorName(qualname.substr(0, dot), qualname.substr(dot + 1));
}

c10::OperatorHandle defined_op(const std::string& qualname) {
  const c10::OperatorName name = operator_name(qualname);
  const std::optional<c10::OperatorHandle> handle = c10::Dispatcher::singleton().findSchema(name);
  if (!handle) fail(ErrorKind::Value, qualname + " is not a defined op");
  return *handle;
}

torch::Library& new_library(torch::Library::Kind kind, const std::string& ns, std::optional<c10::DispatchKey> key) {
  static std::mutex* mutex = new std::mutex();
  static auto* libraries = new std::vector<std::unique_ptr<torch::Library>>();  // never destroyed, as above
  std::lock_guard<std::mutex> lock(*mutex);
  libraries->push_back(std::make_unique<torch::Library>(kind, ns, key, __FILE__, __LINE__));
  return *libraries->back();
}

}  // namespace torch_tile
