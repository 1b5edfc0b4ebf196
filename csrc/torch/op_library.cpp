#include "op_library.h"

#include <memory>
#include <mutex>
#include <vector>

#include "../runtime/error.h"

namespace torch_tile {

OpName split_op_name(const std::string& qualname) {
  const size_t sep = qualname.find("::");
  if (sep == std::string::npos) fail(ErrorKind::Value, "op name must be 'namespace::name', got '" + qualname + "'");
  return OpName{qualname.substr(0, sep), qualname.substr(sep + 2)};
}

torch::Library& new_library(torch::Library::Kind kind, const std::string& ns, std::optional<c10::DispatchKey> key) {
  static std::mutex* mutex = new std::mutex();
  static auto* libraries = new std::vector<std::unique_ptr<torch::Library>>();  // never destroyed, as above
  std::lock_guard<std::mutex> lock(*mutex);
  libraries->push_back(std::make_unique<torch::Library>(kind, ns, key, __FILE__, __LINE__));
  return *libraries->back();
}

}  // namespace torch_tile
