#include "runtime/plan/launch_plan.h"

#include "runtime/error.h"
#include "runtime/kernels/kernel_cache.h"
#include "runtime/plan/limits.h"
#include "runtime/cuda/tensor_map.h"

namespace torch_tile {

LaunchStep::LaunchStep(const LaunchStep& other)
    : kernel(other.kernel), config_id(other.config_id), grid{other.grid[0], other.grid[1], other.grid[2]},
      bindings(other.bindings), site(other.site) {}

LaunchStep& LaunchStep::operator=(const LaunchStep& other) {
  if (this != &other) {
    kernel = other.kernel;
    config_id = other.config_id;
    for (int d = 0; d < 3; ++d) grid[d] = other.grid[d];
    bindings = other.bindings;
    site = other.site;
    inline_cache = std::make_unique<InlineCache>();
  }
  return *this;
}

int LaunchPlan::num_made() const {
  int n = int(allocs.size()) + int(views.size()) + int(constants.size());
  for (const AtenStep& a : aten_steps) n += a.num_outputs;
  return n;
}

namespace {

[[noreturn]] void bad_plan(const std::string& op, const std::string& what) {
  fail(ErrorKind::Runtime, op + ": launch plan " + what);
}

void validate_view(const std::string& op, const ViewStep& v, int slot) {
  if (v.base < 0 || v.base >= slot) bad_plan(op, "has a view of a bad slot");
  if (v.sizes.size() != v.strides.size() || v.sizes.size() > size_t(kMaxShapeRank) || v.offset.code.empty()) {
    bad_plan(op, "has a view of bad rank");
  }
  for (const Expr& e : v.sizes) e.validate();
  for (const Expr& e : v.strides) e.validate();
  v.offset.validate();
}

void validate_aten(const std::string& op, const AtenStep& a, int slot, int num_args) {
  using K = AtenArg::Kind;
  if (a.name.empty() || a.num_outputs < 0) bad_plan(op, "has a malformed ATen step");
  for (const AtenArg& arg : a.args) {
    if (!AtenArg::known_kind(int32_t(arg.kind))) {
      bad_plan(op, "has an ATen argument of unknown kind");
    }
    const bool tensors = arg.kind == K::Tensor || arg.kind == K::TensorList || arg.kind == K::OptionalTensorList;
    if (arg.kind == K::Tensor && arg.slots.size() != 1) bad_plan(op, "has an ATen tensor argument without a slot");
    for (int32_t s : arg.slots) {
      if (tensors ? (s < (arg.kind == K::OptionalTensorList ? -1 : 0) || s >= slot) : (s < 0 || s >= num_args)) {
        bad_plan(op, "has an ATen argument that reads a bad slot");
      }
    }
    if ((arg.kind == K::Int) && arg.ints.size() != 1) bad_plan(op, "has an ATen int argument without a value");
    for (const Expr& e : arg.ints) e.validate();
  }
}

}  // namespace

void LaunchPlan::check_argument_kinds(const std::string& op, const std::vector<ArgKind>& kinds) const {
  // A plan that does not fit the op it is given to: a bad input (ValueError), as a foreign plan is.
  auto refuse = [&](const std::string& what) {
    fail(ErrorKind::Value, op + ": launch plan " + what);
  };
  auto check = [&](const Expr& e) {
    e.for_each_argument_read([&](ExprOp read, int64_t arg) {
      if (arg < 0 || size_t(arg) >= kinds.size()) refuse("has an expression reading a bad argument");
      const ArgKind kind = kinds[size_t(arg)];
      const ArgKind value = value_kind(kind);
      bool ok = false;
      switch (read) {
        case ExprOp::Scalar: ok = value == ArgKind::Int || value == ArgKind::Bool || value == ArgKind::Dtype; break;
        case ExprOp::IsNone: ok = is_optional(kind); break;
        case ExprOp::StrEq: ok = value == ArgKind::String; break;
        case ExprOp::FloatBits: ok = value == ArgKind::Float; break;
        case ExprOp::ListLen: ok = kind == ArgKind::IntList || kind == ArgKind::TensorList; break;
        case ExprOp::ListItem: ok = kind == ArgKind::IntList; break;
        case ExprOp::RequiresGrad: ok = value == ArgKind::Tensor; break;
        default: break;
      }
      if (!ok) refuse("has an expression `" + e.text + "` reading argument " + std::to_string(arg) +
                                " as its kind does not allow");
    });
  };
  for (const Expr& g : guards) check(g);
  for (const AllocStep& a : allocs) for (const Expr& e : a.shape) check(e);
  for (const ViewStep& v : views) {
    for (const Expr& e : v.sizes) check(e);
    for (const Expr& e : v.strides) check(e);
    check(v.offset);
  }
  auto float_argument = [&](int32_t arg, const char* what) {
    if (arg >= 0 && (size_t(arg) >= kinds.size() || value_kind(kinds[size_t(arg)]) != ArgKind::Float)) {
      refuse(std::string("has ") + what + " reading argument " + std::to_string(arg) + ", which is no float");
    }
  };
  for (const AtenStep& a : aten_steps) {
    for (const AtenArg& arg : a.args) {
      for (const Expr& e : arg.ints) check(e);
      const bool reads_float = arg.kind == AtenArg::Kind::Float ||
                               ((arg.kind == AtenArg::Kind::Scalar || arg.kind == AtenArg::Kind::WrappedScalar) &&
                                arg.ints.empty());
      if (reads_float && !arg.slots.empty()) float_argument(arg.slots[0], "an ATen float argument");
    }
  }
  if (backward) {
    for (const Expr& e : backward->ints) check(e);
    for (int32_t arg : backward->float_args) float_argument(arg, "a saved float");
  }
  for (const LaunchStep& l : launches) {
    for (const Expr& g : l.grid) check(g);
    for (const Binding& b : l.bindings) {
      if (b.kind == BindingKind::Int || b.kind == BindingKind::Bool || b.kind == BindingKind::Constexpr) check(b.expr);
      if (b.kind == BindingKind::Float) float_argument(b.slot, "a float binding");
      for (const Expr& e : b.desc.shape) check(e);
      for (const Expr& e : b.desc.strides) check(e);
    }
  }
}

void LaunchPlan::validate(const std::string& op, int num_args) const {
  if (num_list_tensors < 0) bad_plan(op, "has a negative list tensor count");
  const int num_slots = first_made(num_args) + num_made();
  if (num_args > kMaxOpArgs || num_slots > kMaxSlots) {
    fail(ErrorKind::NotImplemented, op + ": " + std::to_string(num_args) + " arguments and " +
                                        std::to_string(num_made()) + " tensors made by the body; torch_tile takes at most " +
                                        std::to_string(kMaxOpArgs) + " arguments and " + std::to_string(kMaxSlots) +
                                        " tensors in all");
  }
  auto check_slot = [&](int slot) {
    if (slot < 0 || slot >= num_slots) bad_plan(op, "references a bad slot");
  };
  for (const TensorGuard& g : tensor_guards) check_slot(g.arg);
  for (const Expr& g : guards) {
    g.validate();
    // Guards select the plan before any step runs: they read the arguments only.
    if (g.max_slot_read() >= first_made(num_args)) bad_plan(op, "has a guard `" + g.text + "` on a tensor it makes");
    if (g.max_read() >= 0) bad_plan(op, "has a guard `" + g.text + "` on a value read from the data");
  }
  if (num_shape_guards < 0 || size_t(num_shape_guards) > guards.size()) bad_plan(op, "has a bad shape-guard count");
  if (is_fallback() && (!order.empty() || !outputs.empty() || backward != nullptr)) {
    bad_plan(op, "runs its body in the host language and also has steps, outputs or a backward");
  }

  // Every step once, in an order where each reads only slots made before it.
  std::vector<char> seen_alloc(allocs.size()), seen_view(views.size()), seen_aten(aten_steps.size()),
      seen_launch(launches.size()), seen_read(reads.size()), seen_check(checks.size()), seen_constant(constants.size());
  auto mark = [&](std::vector<char>& seen, int32_t index) {
    if (index < 0 || size_t(index) >= seen.size() || seen[size_t(index)]) bad_plan(op, "has a bad step order");
    seen[size_t(index)] = 1;
  };
  int slot = first_made(num_args);  // the next slot a step makes
  // Per slot: whether its memory is a constant's (the constant, views of it).
  std::vector<char> constant_memory(static_cast<size_t>(num_slots));
  int num_reads = 0;                // Read steps so far
  int64_t view_dims = 0;
  for (const PlanStep& step : order) {
    switch (step.kind) {
      case StepKind::Alloc: {
        mark(seen_alloc, step.index);
        const AllocStep& a = allocs[size_t(step.index)];
        if (a.kind != AllocStep::Kind::Empty && a.kind != AllocStep::Kind::EmptyLike) {
          bad_plan(op, "has an allocation of unknown kind");
        }
        // An allocation may copy the layout of an input or of an earlier tensor only.
        if (a.kind == AllocStep::Kind::EmptyLike && (a.like_slot < 0 || a.like_slot >= slot)) {
          bad_plan(op, "has an allocation like a bad slot");
        }
        if (a.shape.size() > size_t(kMaxShapeRank)) {
          fail(ErrorKind::NotImplemented, op + ": allocation " + std::to_string(step.index) + " has rank " +
                                              std::to_string(a.shape.size()) + "; at most " +
                                              std::to_string(kMaxShapeRank) + " is supported");
        }
        for (const Expr& e : a.shape) e.validate();
        ++slot;
        break;
      }
      case StepKind::View: {
        mark(seen_view, step.index);
        const ViewStep& v = views[size_t(step.index)];
        validate_view(op, v, slot);
        constant_memory[size_t(slot)] = constant_memory[size_t(v.base)];
        view_dims += 2 * int64_t(v.sizes.size());
        if (view_dims > kMaxViewDims) {
          fail(ErrorKind::NotImplemented, op + ": the body's views have more than " +
                                              std::to_string(kMaxViewDims / 2) + " dimensions in all");
        }
        ++slot;
        break;
      }
      case StepKind::Aten: {
        mark(seen_aten, step.index);
        const AtenStep& a = aten_steps[size_t(step.index)];
        validate_aten(op, a, slot, num_args);
        slot += a.num_outputs;
        break;
      }
      case StepKind::Launch: {
        mark(seen_launch, step.index);
        const LaunchStep& l = launches[size_t(step.index)];
        if (!l.kernel) bad_plan(op, "has a launch step without a kernel");
        if (l.bindings.size() > size_t(kMaxKernelParams)) {
          fail(ErrorKind::NotImplemented, op + ": kernel " + l.kernel->name() + " has more than " +
                                              std::to_string(kMaxKernelParams) + " parameters");
        }
        for (const Expr& g : l.grid) g.validate();
        for (const Binding& b : l.bindings) {
          if (int32_t(b.kind) < int32_t(BindingKind::Tensor) || int32_t(b.kind) > int32_t(BindingKind::TensorDesc)) {
            bad_plan(op, "has a binding of unknown kind");
          }
          if ((b.kind == BindingKind::Tensor || b.kind == BindingKind::TensorDesc) && (b.slot < 0 || b.slot >= slot)) {
            bad_plan(op, "has a launch that reads a bad slot");
          }
          if (b.specialize_layout && b.kind != BindingKind::Tensor) {
            bad_plan(op, "has a layout-specialised binding that is not a tensor");
          }
          if (b.kind == BindingKind::TensorDesc) {
            const size_t rank = b.desc.shape.size();
            if (rank == 0 || rank > size_t(kMaxTensorMapRank) || b.desc.strides.size() != rank) {
              bad_plan(op, "has a tensor descriptor of bad rank");
            }
            for (const Expr& e : b.desc.shape) e.validate();
            for (const Expr& e : b.desc.strides) e.validate();
          }
          if (b.kind == BindingKind::Int || b.kind == BindingKind::Bool || b.kind == BindingKind::Constexpr) {
            b.expr.validate();
          }
        }
        break;
      }
      case StepKind::Read: {
        mark(seen_read, step.index);
        const ReadStep& r = reads[size_t(step.index)];
        if (r.slot < 0 || r.slot >= slot) bad_plan(op, "reads the data of a bad slot");
        if (r.count < 1) bad_plan(op, "reads no value");
        if (r.count > kMaxDataReads - num_reads) {
          fail(ErrorKind::NotImplemented, op + ": the body reads more than " + std::to_string(kMaxDataReads) +
                                              " values from the tensors' data");
        }
        num_reads += r.count;
        break;
      }
      case StepKind::Check: {
        mark(seen_check, step.index);
        const Expr& c = checks[size_t(step.index)].condition;
        c.validate();
        if (c.max_slot_read() >= slot || c.max_read() >= num_reads) bad_plan(op, "checks a value not yet made");
        break;
      }
      case StepKind::Constant: {
        mark(seen_constant, step.index);
        const ConstantStep& c = constants[size_t(step.index)];
        if (c.sizes.size() != c.strides.size() || c.sizes.size() > size_t(kMaxShapeRank)) {
          bad_plan(op, "holds a tensor of bad rank");
        }
        constant_memory[size_t(slot)] = 1;
        ++slot;
        break;
      }
      default: bad_plan(op, "has a step of unknown kind");
    }
  }
  if (order.size() != allocs.size() + views.size() + aten_steps.size() + launches.size() + reads.size() +
                          checks.size() + constants.size()) {
    bad_plan(op, "has a bad step order");
  }
  for (int32_t s : outputs) {
    if (s == -1) continue;
    check_slot(s);
    // An op's results are its own: never a tensor the plan holds for its owner.
    if (constant_memory[size_t(s)]) bad_plan(op, "returns a tensor it holds (or a view of one)");
  }
  if (backward) {
    for (int32_t s : backward->saved) check_slot(s);
    for (const Expr& e : backward->ints) e.validate();
    if (backward->float_args.size() != backward->float_values.size() ||
        (!backward->gradient_op.empty() && backward->differentiable.size() != outputs.size())) {
      bad_plan(op, "has a malformed backward");
    }
  }
}

}  // namespace torch_tile
