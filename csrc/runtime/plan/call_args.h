// The arguments of one op call, as the runtime sees them: tensor views by
// slot, integer, float and str scalars by argument index, which optional
// arguments are None. Lives on the stack.
#pragma once

#include <cstdint>

#include "runtime/plan/expr.h"
#include "runtime/plan/limits.h"
#include "runtime/plan/tensor_arg.h"

namespace torch_tile {

struct CallArgs {
  TensorArg slots[kMaxSlots];  // [0, num_args): inputs (sizes == nullptr: None); then the tensors the plan made
  int64_t ints[kMaxOpArgs];    // int / bool / dtype (ScalarType code) arguments
  double floats[kMaxOpArgs];   // float arguments
  StrArg strings[kMaxOpArgs];  // str arguments
  int64_t list_items[kMaxListItems];  // int[] arguments' items (list_start/list_len by argument)
  int32_t list_start[kMaxOpArgs];
  int32_t list_len[kMaxOpArgs];
  int32_t list_items_used = 0;
  uint64_t none_mask = 0;      // bit i: argument i is None
  uint64_t requires_grad_mask = 0;  // bit i: tensor argument i requires a gradient
  int32_t num_args = 0;
  int32_t num_slots = 0;
  int32_t device = -1;  // the CUDA ordinal all tensor arguments share
  // Sizes and strides of the plan's views (TensorArg points into it); not initialised.
  int64_t view_dims[kMaxViewDims];
  int32_t view_dims_used = 0;
  int64_t reads[kMaxDataReads];  // values read from the tensors' data (Read steps), in order
  int32_t num_reads = 0;

  EvalContext eval() const { return EvalContext{slots, num_slots, ints, num_args, strings, floats, list_items, list_start, list_len,
                       none_mask, requires_grad_mask, reads, num_reads}; }
};

}  // namespace torch_tile
