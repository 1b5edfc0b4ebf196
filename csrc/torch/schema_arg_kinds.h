// The plan format's ArgKind of each schema type a tile op may take: one table,
// read by ops defined in C++ and, through _C, by the Python decorator.
#pragma once

#include <optional>
#include <string>

#include "runtime/plan/launch_plan.h"

namespace torch_tile {

// The kind of an argument whose schema type prints as `real_type` ("Tensor",
// "Optional[int]", "List[Tensor]", "ScalarType"...; c10::Argument::real_type,
// where a dtype is not "int"); nullopt for a type tile ops do not take.
std::optional<ArgKind> arg_kind_of_type(const std::string& real_type);

// What to say when arg_kind_of_type refuses a type.
constexpr const char* kSupportedArgTypes =
    "Tensor, int, float, bool, str, torch.dtype, Optional of each, list[int] and list[Tensor]";

}  // namespace torch_tile
