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

#include "expr.h"
#include "inline_cache.h"
#include "specialization_key.h"
#include "tensor_arg.h"

namespace torch_tile {

class KernelCache;

// What kind of value each schema argument of an op carries.
enum class ArgKind : int32_t { Tensor = 0, Int = 1, Float = 2, Bool = 3 };

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
  DescriptorBinding desc;    // TensorDesc
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

struct LaunchPlan {
  std::vector<TensorGuard> tensor_guards;
  std::vector<Expr> guards;  // each must evaluate to non-zero
  // The first num_shape_guards guards were made before the body's last
  // allocation, so they can change the outputs' shapes (the fake
  // implementation installs only those as torch.compile guards).
  int32_t num_shape_guards = 0;
  std::vector<AllocStep> allocs;
  std::vector<LaunchStep> launches;
  std::vector<int32_t> outputs;  // slots returned, in order

  // Checks slots, ranks and expressions against the runtime's limits; errors name `op`.
  void validate(const std::string& op, int num_args) const;
};

}  // namespace torch_tile
