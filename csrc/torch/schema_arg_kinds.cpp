#include "schema_arg_kinds.h"

#include <unordered_map>

namespace torch_tile {

std::optional<ArgKind> arg_kind_of_type(const std::string& real_type) {
  static const auto* kinds = new std::unordered_map<std::string, ArgKind>{
      {"Tensor", ArgKind::Tensor},
      {"int", ArgKind::Int},
      {"SymInt", ArgKind::Int},
      {"float", ArgKind::Float},
      {"bool", ArgKind::Bool},
      {"str", ArgKind::String},
      {"ScalarType", ArgKind::Dtype},
      {"Optional[Tensor]", ArgKind::OptionalTensor},
      {"Optional[int]", ArgKind::OptionalInt},
      {"Optional[SymInt]", ArgKind::OptionalInt},
      {"Optional[float]", ArgKind::OptionalFloat},
      {"Optional[bool]", ArgKind::OptionalBool},
      {"Optional[str]", ArgKind::OptionalString},
      {"Optional[ScalarType]", ArgKind::OptionalDtype},
      {"List[int]", ArgKind::IntList},
      {"List[SymInt]", ArgKind::IntList},
      {"List[Tensor]", ArgKind::TensorList},
  };
  auto it = kinds->find(real_type);
  if (it == kinds->end()) return std::nullopt;
  return it->second;
}

}  // namespace torch_tile
