// The arguments of one op call, as the runtime sees them: tensor views by
// slot, integer and float scalars by argument index. Lives on the stack.
#pragma once

#include <cstdint>

#include "expr.h"
#include "limits.h"
#include "tensor_arg.h"

namespace torch_tile {

struct CallArgs {
  TensorArg slots[kMaxSlots];  // [0, num_args): inputs; then allocated outputs
  int64_t ints[kMaxOpArgs];    // int / bool arguments
  double floats[kMaxOpArgs];   // float arguments
  int32_t num_args = 0;
  int32_t num_slots = 0;
  int32_t device = -1;  // the CUDA ordinal all tensor arguments share

  EvalContext eval() const { return EvalContext{slots, num_slots, ints, num_args}; }
};

}  // namespace torch_tile
