// Integer expressions of a launch plan: a small postfix bytecode over int64,
// evaluated per call with overflow checks. Operands reference the call's
// tensors (sizes, strides, numel) and integer scalar arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/plan/tensor_arg.h"

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
  IsNone,      // [IsNone, argument]: 1 when an optional argument is None
  DataPtr,     // [DataPtr, slot]: the tensor's address (alignment guards)
  StrEq,       // [StrEq, argument, n, ceil(n/8) words]: 1 when a str argument equals those n bytes
  FloatBits,   // [FloatBits, argument]: a float argument's IEEE-754 bits (value guards)
  ListLen,     // [ListLen, argument]: an int[] argument's length
  ListItem,    // [ListItem, argument, index]: an item of an int[] argument
  BitLength,   // Python's int.bit_length()
  Read,        // [Read, k]: the k-th value the call read from its tensors' data (a plan's Read step)
  RequiresGrad,  // [RequiresGrad, argument]: 1 when a tensor argument requires a gradient (a library's forward asks)
  Count_,      // number of opcodes (keep last)
};

// A str argument's bytes (not owned: the caller's string outlives the call).
struct StrArg {
  const char* data;
  size_t size;
};

// The values one expression may read.
struct EvalContext {
  const TensorArg* slots = nullptr;  // inputs (by argument index) then the tensors the plan made
  int32_t num_slots = 0;
  const int64_t* scalars = nullptr;  // int/bool/dtype scalar arguments, by argument index
  int32_t num_scalars = 0;
  const StrArg* strings = nullptr;   // str arguments, by argument index
  const double* floats = nullptr;    // float arguments, by argument index
  const int64_t* list_items = nullptr;  // int[] arguments' items, all in one array
  const int32_t* list_start = nullptr;  // by argument index: where its items start in list_items
  const int32_t* list_len = nullptr;    // by argument index: how many
  uint64_t none_mask = 0;            // bit i: argument i is None
  uint64_t requires_grad_mask = 0;   // bit i: tensor argument i requires a gradient
  const int64_t* reads = nullptr;    // values read from the tensors' data so far (Read steps), in order
  int32_t num_reads = 0;
};

struct Expr {
  std::vector<int64_t> code;  // postfix
  std::string text;           // source-like rendering for error messages

  // Checks the bytecode's shape once, at plan construction.
  void validate() const;
  // Calls read(op, argument) for each operation that reads an op argument
  // by index (Scalar, IsNone, StrEq, FloatBits, ListLen, ListItem, RequiresGrad); the
  // expression must be valid.
  template <class Read>
  void for_each_argument_read(Read read) const {
    for (size_t pc = 0; pc < code.size(); pc += 1 + size_t(operands_at(pc))) {
      const ExprOp op = ExprOp(code[pc]);
      if (reads_argument(op)) read(op, code[pc + 1]);
    }
  }

  int64_t evaluate(const EvalContext& ctx) const;
  // The largest tensor slot the expression reads (Size, Stride, Numel, DataPtr), or -1; it must be valid.
  int64_t max_slot_read() const;
  // The largest Read index the expression uses, or -1; it must be valid.
  int64_t max_read() const;
  // Whether no call can make both this and `other` non-zero, as their code
  // alone shows: one is the other followed by Not; both compare the same two
  // operands, one with a comparison and the other with its complement (< and
  // >=, == and !=...); or both are `e == constant` for one e and different
  // constants. Both must be valid. False means "not shown", not "overlap".
  bool contradicts(const Expr& other) const;

 private:
  int64_t operands_at(size_t pc) const;
  std::vector<size_t> operation_starts() const;  // where each operation starts; valid code
  static bool reads_argument(ExprOp op);
};

}  // namespace torch_tile
