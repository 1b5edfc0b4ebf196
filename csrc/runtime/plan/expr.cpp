#include "runtime/plan/expr.h"

#include <algorithm>

#include <cstring>

#include "runtime/error.h"

namespace torch_tile {
namespace {

constexpr int kMaxStack = 32;

// Operands after the opcode at `pc` (StrEq's depend on its length operand; -1: malformed).
int64_t operand_count(ExprOp op, const int64_t* pc, const int64_t* end) {
  switch (op) {
    case ExprOp::Const: return 1;
    case ExprOp::Size: case ExprOp::Stride: return 2;
    case ExprOp::Numel: case ExprOp::Scalar: case ExprOp::IsNone: case ExprOp::DataPtr:
    case ExprOp::FloatBits: case ExprOp::ListLen: case ExprOp::Read: case ExprOp::RequiresGrad: return 1;
    case ExprOp::ListItem: return 2;
    case ExprOp::StrEq: {
      if (end - pc < 3 || pc[2] < 0 || pc[2] > (int64_t(1) << 20)) return -1;
      return 2 + (pc[2] + 7) / 8;
    }
    default: return 0;
  }
}

int stack_effect(ExprOp op) {
  switch (op) {
    case ExprOp::Const: case ExprOp::Size: case ExprOp::Stride:
    case ExprOp::Numel: case ExprOp::Scalar: case ExprOp::IsNone: case ExprOp::DataPtr:
    case ExprOp::StrEq: case ExprOp::FloatBits: case ExprOp::ListLen: case ExprOp::ListItem: case ExprOp::Read:
    case ExprOp::RequiresGrad:
      return +1;
    case ExprOp::Neg: case ExprOp::NextPow2: case ExprOp::Not: case ExprOp::BitLength: return 0;
    default: return -1;  // binary
  }
}

[[noreturn]] void overflow(const Expr& e) {
  fail(ErrorKind::Value, "integer overflow (int64) while evaluating `" + e.text + "`");
}

const TensorArg& slot_of(const Expr& e, const EvalContext& ctx, int64_t slot) {
  if (slot < 0 || slot >= ctx.num_slots || ctx.slots[slot].sizes == nullptr) {
    fail(ErrorKind::Runtime, "expression `" + e.text + "` reads tensor slot " +
                                 std::to_string(slot) + " which holds no tensor");
  }
  return ctx.slots[slot];
}

int64_t dim_of(const Expr& e, const TensorArg& t, int64_t dim) {
  if (dim < 0) dim += t.ndim;
  if (dim < 0 || dim >= t.ndim) {
    fail(ErrorKind::Value, "expression `" + e.text + "` reads dimension " +
                               std::to_string(dim) + " of a tensor of rank " +
                               std::to_string(t.ndim));
  }
  return dim;
}

int64_t floor_div(const Expr& e, int64_t a, int64_t b) {
  if (b == 0) fail(ErrorKind::Value, "division by zero while evaluating `" + e.text + "`");
  if (a == INT64_MIN && b == -1) overflow(e);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(const Expr& e, int64_t a, int64_t b) {
  if (b == 0) fail(ErrorKind::Value, "modulo by zero while evaluating `" + e.text + "`");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// triton.next_power_of_2, which gives 0 for n <= 0.
int64_t next_pow2(const Expr& e, int64_t n) {
  if (n <= 0) return 0;
  if (n == 1) return 1;
  if (n > (int64_t(1) << 62)) overflow(e);
  uint64_t v = uint64_t(n) - 1;
  v |= v >> 1; v |= v >> 2; v |= v >> 4; v |= v >> 8; v |= v >> 16; v |= v >> 32;
  return int64_t(v + 1);
}

}  // namespace

int64_t Expr::operands_at(size_t pc) const {
  return operand_count(ExprOp(code[pc]), code.data() + pc, code.data() + code.size());
}

int64_t Expr::max_slot_read() const {
  int64_t slot = -1;
  for (size_t pc = 0; pc < code.size(); pc += 1 + size_t(operands_at(pc))) {
    const ExprOp op = ExprOp(code[pc]);
    if (op == ExprOp::Size || op == ExprOp::Stride || op == ExprOp::Numel || op == ExprOp::DataPtr) {
      slot = std::max(slot, code[pc + 1]);
    }
  }
  return slot;
}

int64_t Expr::max_read() const {
  int64_t k = -1;
  for (size_t pc = 0; pc < code.size(); pc += 1 + size_t(operands_at(pc))) {
    if (ExprOp(code[pc]) == ExprOp::Read) k = std::max(k, code[pc + 1]);
  }
  return k;
}

namespace {

// The complement of a comparison (a < b is false exactly when a >= b holds), or Count_ for any other op.
ExprOp complement(ExprOp op) {
  switch (op) {
    case ExprOp::Lt: return ExprOp::Ge;
    case ExprOp::Ge: return ExprOp::Lt;
    case ExprOp::Le: return ExprOp::Gt;
    case ExprOp::Gt: return ExprOp::Le;
    case ExprOp::Eq: return ExprOp::Ne;
    case ExprOp::Ne: return ExprOp::Eq;
    default: return ExprOp::Count_;
  }
}

}  // namespace

std::vector<size_t> Expr::operation_starts() const {
  std::vector<size_t> starts;
  for (size_t pc = 0; pc < code.size(); pc += 1 + size_t(operands_at(pc))) starts.push_back(pc);
  return starts;
}

bool Expr::contradicts(const Expr& other) const {
  const std::vector<size_t> mine = operation_starts(), theirs = other.operation_starts();
  if (mine.empty() || theirs.empty()) return false;
  // `g` and `g` Not (either way round): e's last operation, Not, starts where g ends.
  const auto negation_of = [](const Expr& e, const std::vector<size_t>& starts, const Expr& g) {
    return e.code.size() == g.code.size() + 1 && starts.back() == g.code.size() &&
           ExprOp(e.code.back()) == ExprOp::Not && std::equal(g.code.begin(), g.code.end(), e.code.begin());
  };
  if (negation_of(other, theirs, *this) || negation_of(*this, mine, other)) return true;
  // The other rules compare codes of one length whose last operations start at one place.
  if (code.size() != other.code.size() || mine.back() != theirs.back()) return false;
  const ExprOp last = ExprOp(code[mine.back()]), their_last = ExprOp(other.code[theirs.back()]);
  // The same operands under complementary comparisons (a comparison has no operand: it is the last element).
  if (complement(last) != ExprOp::Count_ && complement(last) == their_last &&
      std::equal(code.begin(), code.end() - 1, other.code.begin())) {
    return true;
  }
  // e == a and e == b, a != b: the last two operations are [Const v] [Eq] in both.
  if (last != ExprOp::Eq || their_last != ExprOp::Eq || mine.size() < 2 || theirs.size() < 2) return false;
  const size_t c = mine[mine.size() - 2];
  return theirs[theirs.size() - 2] == c && ExprOp(code[c]) == ExprOp::Const &&
         ExprOp(other.code[c]) == ExprOp::Const && code[c + 1] != other.code[c + 1] &&
         std::equal(code.begin(), code.begin() + std::ptrdiff_t(c), other.code.begin());
}

bool Expr::reads_argument(ExprOp op) {
  switch (op) {
    case ExprOp::Scalar: case ExprOp::IsNone: case ExprOp::StrEq: case ExprOp::FloatBits: case ExprOp::ListLen:
    case ExprOp::ListItem: case ExprOp::RequiresGrad: return true;
    default: return false;
  }
}

void Expr::validate() const {
  int depth = 0;
  size_t pc = 0;
  while (pc < code.size()) {
    const int64_t raw = code[pc];
    if (raw < 0 || raw >= int64_t(ExprOp::Count_)) {
      fail(ErrorKind::Runtime, "bad opcode " + std::to_string(raw) + " in expression `" + text + "`");
    }
    const ExprOp op = ExprOp(raw);
    const int64_t operands = operand_count(op, code.data() + pc, code.data() + code.size());
    if (operands < 0 || operands > int64_t(code.size() - pc - 1)) {
      fail(ErrorKind::Runtime, "malformed expression `" + text + "`");
    }
    pc += 1 + size_t(operands);
    depth += stack_effect(op);
    if (depth < 1 || depth > kMaxStack || pc > code.size()) {
      fail(ErrorKind::Runtime, "malformed expression `" + text + "`");
    }
  }
  if (depth != 1) fail(ErrorKind::Runtime, "malformed expression `" + text + "`");
}

int64_t Expr::evaluate(const EvalContext& ctx) const {
  int64_t stack[kMaxStack];
  int sp = 0;
  const int64_t* pc = code.data();
  const int64_t* end = pc + code.size();
  while (pc < end) {
    const ExprOp op = ExprOp(*pc++);
    switch (op) {
      case ExprOp::Const: stack[sp++] = *pc++; continue;
      case ExprOp::Size: {
        const TensorArg& t = slot_of(*this, ctx, pc[0]);
        stack[sp++] = t.sizes[dim_of(*this, t, pc[1])];
        pc += 2;
        continue;
      }
      case ExprOp::Stride: {
        const TensorArg& t = slot_of(*this, ctx, pc[0]);
        stack[sp++] = t.strides[dim_of(*this, t, pc[1])];
        pc += 2;
        continue;
      }
      case ExprOp::Numel: {
        const TensorArg& t = slot_of(*this, ctx, *pc++);
        int64_t n = 1;
        for (int32_t d = 0; d < t.ndim; ++d) {
          if (__builtin_mul_overflow(n, t.sizes[d], &n)) overflow(*this);
        }
        stack[sp++] = n;
        continue;
      }
      case ExprOp::Scalar: {
        const int64_t i = *pc++;
        if (i < 0 || i >= ctx.num_scalars) {
          fail(ErrorKind::Runtime, "expression `" + text + "` reads a missing scalar argument");
        }
        stack[sp++] = ctx.scalars[i];
        continue;
      }
      case ExprOp::IsNone: case ExprOp::RequiresGrad: {
        const int64_t i = *pc++;
        if (i < 0 || i >= 64) fail(ErrorKind::Runtime, "expression `" + text + "` reads a bad argument");
        stack[sp++] = ((op == ExprOp::IsNone ? ctx.none_mask : ctx.requires_grad_mask) >> i) & 1;
        continue;
      }
      case ExprOp::FloatBits: {
        const int64_t i = *pc++;
        if (i < 0 || i >= ctx.num_scalars || ctx.floats == nullptr) {
          fail(ErrorKind::Runtime, "expression `" + text + "` reads a missing float argument");
        }
        int64_t bits;
        std::memcpy(&bits, &ctx.floats[i], sizeof(bits));
        stack[sp++] = bits;
        continue;
      }
      case ExprOp::ListLen: case ExprOp::ListItem: {
        const int64_t i = pc[0];
        if (i < 0 || i >= ctx.num_scalars || ctx.list_len == nullptr) {
          fail(ErrorKind::Runtime, "expression `" + text + "` reads a missing int[] argument");
        }
        if (op == ExprOp::ListLen) {
          stack[sp++] = ctx.list_len[i];
          pc += 1;
          continue;
        }
        const int64_t k = pc[1];
        if (k < 0 || k >= ctx.list_len[i]) {
          fail(ErrorKind::Value, "expression `" + text + "` reads item " + std::to_string(k) + " of a list of " +
                                     std::to_string(ctx.list_len[i]));
        }
        stack[sp++] = ctx.list_items[ctx.list_start[i] + k];
        pc += 2;
        continue;
      }
      case ExprOp::Read: {
        const int64_t k = *pc++;
        if (k < 0 || k >= ctx.num_reads) {
          fail(ErrorKind::Runtime, "expression `" + text + "` uses data value " + std::to_string(k) +
                                       " before the plan read it");
        }
        stack[sp++] = ctx.reads[k];
        continue;
      }
      case ExprOp::DataPtr: {
        const TensorArg& t = slot_of(*this, ctx, *pc++);
        stack[sp++] = int64_t(reinterpret_cast<uintptr_t>(t.data));
        continue;
      }
      case ExprOp::StrEq: {
        const int64_t i = pc[0];
        const size_t n = size_t(pc[1]);
        if (i < 0 || i >= ctx.num_scalars || ctx.strings == nullptr || ((ctx.none_mask >> i) & 1)) {
          stack[sp++] = 0;  // not a str here (None): never equal
        } else {
          const StrArg& s = ctx.strings[i];
          stack[sp++] = s.size == n && std::memcmp(s.data, pc + 2, n) == 0;
        }
        pc += 2 + (n + 7) / 8;
        continue;
      }
      case ExprOp::Neg:
        if (stack[sp - 1] == INT64_MIN) overflow(*this);
        stack[sp - 1] = -stack[sp - 1];
        continue;
      case ExprOp::NextPow2: stack[sp - 1] = next_pow2(*this, stack[sp - 1]); continue;
      case ExprOp::Not: stack[sp - 1] = stack[sp - 1] == 0; continue;
      case ExprOp::BitLength: {
        const int64_t v = stack[sp - 1];
        const uint64_t magnitude = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
        stack[sp - 1] = magnitude == 0 ? 0 : 64 - __builtin_clzll(magnitude);
        continue;
      }
      default: break;
    }
    // Binary operators.
    const int64_t b = stack[--sp];
    int64_t& a = stack[sp - 1];
    switch (op) {
      case ExprOp::Add: if (__builtin_add_overflow(a, b, &a)) overflow(*this); break;
      case ExprOp::Sub: if (__builtin_sub_overflow(a, b, &a)) overflow(*this); break;
      case ExprOp::Mul: if (__builtin_mul_overflow(a, b, &a)) overflow(*this); break;
      case ExprOp::FloorDiv: a = floor_div(*this, a, b); break;
      case ExprOp::Mod: a = floor_mod(*this, a, b); break;
      case ExprOp::Min: a = a < b ? a : b; break;
      case ExprOp::Max: a = a > b ? a : b; break;
      case ExprOp::Lt: a = a < b; break;
      case ExprOp::Le: a = a <= b; break;
      case ExprOp::Eq: a = a == b; break;
      case ExprOp::Ne: a = a != b; break;
      case ExprOp::Gt: a = a > b; break;
      case ExprOp::Ge: a = a >= b; break;
      case ExprOp::BitAnd: a = a & b; break;
      case ExprOp::BitOr: a = a | b; break;
      case ExprOp::BitXor: a = a ^ b; break;
      case ExprOp::Shl:
        if (b < 0 || b > 62 || (a != 0 && (a > (INT64_MAX >> b) || a < (INT64_MIN >> b)))) overflow(*this);
        a = int64_t(uint64_t(a) << b);
        break;
      case ExprOp::Shr:
        if (b < 0) fail(ErrorKind::Value, "negative shift count in `" + text + "`");
        a = b > 63 ? (a < 0 ? -1 : 0) : (a >> b);
        break;
      default: fail(ErrorKind::Runtime, "bad opcode in expression `" + text + "`");
    }
  }
  return stack[0];
}

}  // namespace torch_tile
