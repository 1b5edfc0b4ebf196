// Integer expressions of a launch plan: a small postfix bytecode over int64,
// evaluated per call with overflow checks. Operands reference the call's
// tensors (sizes, strides, numel) and integer scalar arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor_arg.h"

namespace torch_tile {

enum class ExprOp : int64_t {
  Const = 0,   // [Const, value]
  Size,        // [Size, slot, dim]
  Stride,      // [Stride, slot, dim]
  Numel,       // [Numel, slot]
  Scalar,      // [Scalar, argument]
  Add, Sub, Mul,
  FloorDiv,    // Python's //: rounds toward -inf
  Mod,         // Python's %: result has the divisor's sign
  Neg,
  Min, Max,
  NextPow2,    // triton.next_power_of_2
  Lt, Le, Eq, Ne, Gt, Ge,
  Not,
  BitAnd, BitOr, BitXor, Shl, Shr,
  Count_,      // number of opcodes (keep last)
};

// The values one expression may read.
struct EvalContext {
  const TensorArg* slots = nullptr;  // inputs (by argument index) then allocated outputs
  int32_t num_slots = 0;
  const int64_t* scalars = nullptr;  // integer/bool scalar arguments, by argument index
  int32_t num_scalars = 0;
};

struct Expr {
  std::vector<int64_t> code;  // postfix
  std::string text;           // source-like rendering for error messages

  // Checks the bytecode's shape once, at plan construction.
  void validate() const;
  int64_t evaluate(const EvalContext& ctx) const;
};

}  // namespace torch_tile
