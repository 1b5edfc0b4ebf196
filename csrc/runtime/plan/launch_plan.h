// A launch plan: what one traced op body does, as plain data. Guards select
// the plan for a call; allocations and launches then run in order. This file
// is the plan format's definition: the Python side takes every kind and code
// from here through _C (csrc/python/plan_bindings.cpp), and
// plan_serialization.h writes it as bytes. docs/ARCHITECTURE.md, "The launch
// plan", describes it field by field.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/plan/expr.h"
#include "runtime/launch/inline_cache.h"
#include "runtime/launch/specialization_key.h"
#include "runtime/plan/tensor_arg.h"

namespace torch_tile {

class KernelCache;

// What kind of value each schema argument of an op carries. An optional
// argument may be None (ExprOp::IsNone reads which); a str is compared with
// ExprOp::StrEq; a dtype is read as its ScalarType code.
enum class ArgKind : int32_t {
  Tensor = 0, Int = 1, Float = 2, Bool = 3, String = 4, Dtype = 5,
  OptionalTensor = 6, OptionalInt = 7, OptionalFloat = 8, OptionalBool = 9, OptionalString = 10,
  OptionalDtype = 11,
  IntList = 12,  // int[]: its length and items are read with ExprOp::ListLen / ListItem
  TensorList = 13,  // Tensor[]: its items take slots after the arguments; ExprOp::ListLen reads its length
  Count_,  // keep last
};
inline bool is_optional(ArgKind k) { return k >= ArgKind::OptionalTensor && k <= ArgKind::OptionalDtype; }
// The kind of a present value of `k` (OptionalInt -> Int).
inline ArgKind value_kind(ArgKind k) {
  return is_optional(k) ? ArgKind(int32_t(k) - int32_t(ArgKind::OptionalTensor)) : k;
}

// Dtype and rank every call must have for a tensor argument.
struct TensorGuard {
  int32_t arg = 0;
  uint32_t dtype = 0;  // pack_dtype()
  int32_t ndim = 0;
};

struct AllocStep {
  enum class Kind : int32_t { Empty, EmptyLike };
  Kind kind = Kind::Empty;
  std::vector<Expr> shape;  // Empty: sizes (contiguous)
  int32_t like_slot = -1;   // EmptyLike: the tensor whose layout is copied
  uint32_t dtype = 0;       // pack_dtype()
  bool zero = false;        // zeros / zeros_like
};

enum class BindingKind : int32_t {
  Tensor = 0,     // pointer of a tensor slot
  Int = 1,        // integer expression, i32 or i64 by value (as Triton)
  Bool = 2,       // u1 from an expression
  Float = 3,      // fp32 from a float argument or constant
  Constexpr = 4,  // integer expression whose value enters the key
  Static = 5,     // compile-time constant known at trace time (in config_id)
  TensorDesc = 6, // Triton host tensor descriptor over a tensor slot (TMA)
};

// A host tensor descriptor: its base is the binding's slot; block shape and
// padding mode are static (in config_id; the compiled variant's metadata).
struct DescriptorBinding {
  std::vector<Expr> shape;    // elements, outermost first
  std::vector<Expr> strides;  // elements
  bool nan_padding = false;
  bool round_tf32 = false;
  std::string name;  // the kernel parameter, for error messages
};

struct Binding {
  BindingKind kind = BindingKind::Static;
  int32_t slot = -1;         // Tensor: slot; Float: float argument index or -1
  Expr expr;                 // Int, Bool, Constexpr
  double float_value = 0.0;  // Float constant
  bool specialize = true;    // false under do_not_specialize
  bool specialize_alignment = true;
  bool specialize_layout = false;  // Tensor: cuTile's array bits (layout_key_word) instead of Triton's word
  DescriptorBinding desc;    // TensorDesc
};

// A tensor made from another without an ATen call: the base slot's memory
// read with new sizes and strides, `offset` elements from its element 0.
struct ViewStep {
  int32_t base = -1;
  std::vector<Expr> sizes;
  std::vector<Expr> strides;
  Expr offset;
  uint32_t dtype = 0;  // pack_dtype(); the base's, or one of the same width
};

// One argument of an ATen step, in schema order (defaults filled in).
struct AtenArg {
  enum class Kind : int32_t {
    None = 0,
    Tensor = 1,              // slots[0]
    TensorList = 2,          // slots
    OptionalTensorList = 3,  // slots; -1 is None
    Int = 4,                 // ints[0] (also dtype, layout and memory format codes)
    IntList = 5,             // ints
    Float = 6,               // float argument slots[0], or `number` when slots is empty
    Bool = 7,                // number != 0
    String = 8,              // text
    Device = 9,              // the call's device; text "cpu": the host (a tensor the body builds there)
    Scalar = 10,             // ints[0] if given, else as Float
    WrappedScalar = 11,      // a Scalar where the schema takes a Tensor (a Python number in `x * 2`)
    BoolList = 12,           // ints, each != 0 (convolution_backward's output_mask)
  };
  // Whether `kind` is one of Kind's values (a plan read or built elsewhere may hold any int).
  static bool known_kind(int32_t kind) { return kind >= int32_t(Kind::None) && kind <= int32_t(Kind::BoolList); }
  Kind kind = Kind::None;
  std::vector<int32_t> slots;
  std::vector<Expr> ints;
  double number = 0.0;
  std::string text;
};

// An ATen operation replayed through the dispatcher on the current stream.
struct AtenStep {
  std::string name;      // "aten::clone"
  std::string overload;  // "" for the default overload
  std::vector<AtenArg> args;
  int32_t num_outputs = 0;  // tensor results that become slots (0: an in-place or out= call)
  std::string site;         // "file:line" in the op body
  // Runtime state, not plan data: the binding's resolved operator.
  std::shared_ptr<const void> resolved;
};

// Values the body reads from a tensor's data on the host (`.item()`, `int(t)`, `bool(t)`, `.tolist()`): the
// `count` elements of `slot` in row-major order, as int64 (bools as 0/1), copied to the host in one transfer on
// the call's stream after the work before it, as eager reads them. Later expressions use them as [Read, k], k
// counting the values the plan's Read steps read, in order.
struct ReadStep {
  int32_t slot = -1;
  int32_t count = 1;
  std::string site;  // "file:line" in the op body
};

// A condition on values read from the data (or on the sizes of tensors whose size is data) that the plan's later
// steps assume. Where it does not hold, the call leaves the plan and runs the op body instead; nothing before it
// writes the op's arguments, so the body sees them as they came.
struct CheckStep {
  Expr condition;    // must evaluate to non-zero
  std::string site;  // "file:line" in the op body
};

// A tensor the body did not receive and did not make (module or library state: a lookup table, a buffer the library
// keeps between calls), held by the plan. Each call takes the tensor as it is then (its data, as eager reads it);
// where the tensor is gone (its owner freed it), or its dtype, sizes or strides are no longer these, the op traces
// again (the plan's expressions took its sizes as constants); a call on another device than the tensor's runs the
// op body.
struct ConstantStep {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  uint32_t dtype = 0;  // pack_dtype()
  std::string site;    // "file:line" in the op body where it was first used
  // Runtime state, not plan data: the binding's reference to the tensor (a weak one: the owner keeps it alive).
  // A plan holding one is never serialized: the tensor is this process's.
  std::shared_ptr<const void> held;
};

enum class StepKind : int32_t { Alloc = 0, View = 1, Aten = 2, Launch = 3, Read = 4, Check = 5, Constant = 6 };

// One entry of a plan's order: the `index`-th step of its kind's list.
struct PlanStep {
  StepKind kind = StepKind::Alloc;
  int32_t index = 0;
};

// One kernel launch of the plan.
struct LaunchStep {
  std::shared_ptr<KernelCache> kernel;
  int64_t config_id = 0;  // the launch site's static part (constants, options): the key's first word
  Expr grid[3];
  std::vector<Binding> bindings;  // one per kernel parameter, in order
  std::string site;               // "file:line" of the launch in the op body
  // Runtime state, not plan data: a copy of the step starts with an empty cache.
  std::unique_ptr<InlineCache> inline_cache = std::make_unique<InlineCache>();

  LaunchStep() = default;
  LaunchStep(const LaunchStep& other);
  LaunchStep& operator=(const LaunchStep& other);
  LaunchStep(LaunchStep&&) noexcept = default;
  LaunchStep& operator=(LaunchStep&&) noexcept = default;
};

// What a differentiable op's forward keeps for its native backward, traced
// from its `setup_context` (torch_tile/_backward.py). After the forward ran,
// the tensors in `saved`, the `ints` and the floats are handed, in that order,
// to the op's gradient op, a tile op whose body is the registered backward
// (then one gradient per output and the needs-input-grad mask).
struct BackwardSpec {
  std::string gradient_op;  // its qualname; empty: this plan's calls differentiate in Python, `reason` says why
  std::string reason;
  std::vector<int32_t> saved;          // slots (inputs, or tensors the plan made)
  std::vector<Expr> ints;              // evaluated on the call's arguments
  std::vector<int32_t> float_args;     // per float: the float argument it is, or -1 for float_values[i]
  std::vector<double> float_values;
  std::vector<uint8_t> differentiable;  // per output (mark_non_differentiable clears it)
  bool materialize_grads = true;       // undefined output gradients become zeros, as autograd.Function's
  // Runtime state, not plan data: the gradient op, resolved when the plan is installed.
  std::shared_ptr<const void> resolved;
};

struct LaunchPlan {
  std::vector<TensorGuard> tensor_guards;
  std::vector<Expr> guards;  // each must evaluate to non-zero
  // The first num_shape_guards guards were made before the body's last
  // tensor-making step, so they can change the outputs' shapes (the fake
  // implementation installs only those as torch.compile guards).
  int32_t num_shape_guards = 0;
  // Tensors the op's Tensor[] arguments hold in the calls this plan serves
  // (their lengths are guarded): they take the slots right after the
  // arguments, in argument order; the tensors the plan makes follow them.
  int32_t num_list_tensors = 0;
  std::vector<AllocStep> allocs;
  std::vector<ViewStep> views;
  std::vector<AtenStep> aten_steps;
  std::vector<LaunchStep> launches;
  std::vector<ReadStep> reads;
  std::vector<CheckStep> checks;
  std::vector<ConstantStep> constants;
  // The steps in the order they run, each once. Allocations, views and ATen
  // results take the slots after the arguments in this order.
  std::vector<PlanStep> order;
  std::vector<int32_t> outputs;  // slots returned, in order (a gradient op's: -1 is an undefined tensor, a None)
  // Set when the op has a registered backward (not serialized: loaded plans differentiate in Python).
  std::shared_ptr<BackwardSpec> backward;
  // Non-empty: the calls this plan selects run the op body in the host language (the tracer could not hold
  // what the body does, and says why here), like a graph break; such a plan has guards only. Not serialized:
  // a process without the body could not run it.
  std::string fallback;

  bool is_fallback() const { return !fallback.empty(); }
  // Whether a call may leave the plan for the op body (a Check step that does not hold).
  bool may_leave() const { return !checks.empty(); }

  // Tensors the plan makes (slots after the arguments and their list items).
  int num_made() const;
  // The first slot the plan's steps make.
  int first_made(int num_args) const { return num_args + num_list_tensors; }

  // Checks slots, ranks and expressions against the runtime's limits; errors name `op`.
  void validate(const std::string& op, int num_args) const;
  // Checks that every expression reads each argument as its kind allows (a
  // str compared as a str, a list's items only of an int[], None-ness only
  // of an optional...): a plan read from bytes could say otherwise. The plan
  // must be valid.
  void check_argument_kinds(const std::string& op, const std::vector<ArgKind>& kinds) const;
};

}  // namespace torch_tile
