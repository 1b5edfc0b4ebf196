#include "launch_plan.h"

#include "error.h"
#include "kernel_cache.h"
#include "limits.h"
#include "tensor_map.h"

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

void LaunchPlan::validate(const std::string& op, int num_args) const {
  const int num_slots = num_args + int(allocs.size());
  if (num_args > kMaxOpArgs || num_slots > kMaxSlots) {
    fail(ErrorKind::NotImplemented, op + ": " + std::to_string(num_args) + " arguments and " +
                                        std::to_string(allocs.size()) + " allocations; torch_tile takes at most " +
                                        std::to_string(kMaxOpArgs) + " arguments and " + std::to_string(kMaxSlots) +
                                        " tensors in all");
  }
  auto check_slot = [&](int slot) {
    if (slot < 0 || slot >= num_slots) fail(ErrorKind::Runtime, op + ": launch plan references a bad slot");
  };
  for (const TensorGuard& g : tensor_guards) check_slot(g.arg);
  for (const Expr& g : guards) g.validate();
  if (num_shape_guards < 0 || size_t(num_shape_guards) > guards.size()) {
    fail(ErrorKind::Runtime, op + ": launch plan has a bad shape-guard count");
  }
  for (size_t i = 0; i < allocs.size(); ++i) {
    const AllocStep& a = allocs[i];
    if (a.kind != AllocStep::Kind::Empty && a.kind != AllocStep::Kind::EmptyLike) {
      fail(ErrorKind::Runtime, op + ": launch plan has an allocation of unknown kind");
    }
    // An allocation may copy the layout of an input or of an earlier output only.
    if (a.kind == AllocStep::Kind::EmptyLike && (a.like_slot < 0 || a.like_slot >= num_args + int(i))) {
      fail(ErrorKind::Runtime, op + ": launch plan has an allocation like a bad slot");
    }
    if (a.shape.size() > size_t(kMaxShapeRank)) {
      fail(ErrorKind::NotImplemented, op + ": allocation " + std::to_string(i) + " has rank " +
                                          std::to_string(a.shape.size()) + "; at most " +
                                          std::to_string(kMaxShapeRank) + " is supported");
    }
    for (const Expr& e : a.shape) e.validate();
  }
  for (const LaunchStep& l : launches) {
    if (!l.kernel) fail(ErrorKind::Runtime, op + ": launch plan step without a kernel");
    if (l.bindings.size() > size_t(kMaxKernelParams)) {
      fail(ErrorKind::NotImplemented, op + ": kernel " + l.kernel->name() + " has more than " +
                                          std::to_string(kMaxKernelParams) + " parameters");
    }
    for (const Expr& g : l.grid) g.validate();
    for (const Binding& b : l.bindings) {
      if (int32_t(b.kind) < int32_t(BindingKind::Tensor) || int32_t(b.kind) > int32_t(BindingKind::TensorDesc)) {
        fail(ErrorKind::Runtime, op + ": launch plan has a binding of unknown kind");
      }
      if (b.kind == BindingKind::Tensor || b.kind == BindingKind::TensorDesc) check_slot(b.slot);
      if (b.kind == BindingKind::TensorDesc) {
        const size_t rank = b.desc.shape.size();
        if (rank == 0 || rank > size_t(kMaxTensorMapRank) || b.desc.strides.size() != rank) {
          fail(ErrorKind::Runtime, op + ": launch plan has a tensor descriptor of bad rank");
        }
        for (const Expr& e : b.desc.shape) e.validate();
        for (const Expr& e : b.desc.strides) e.validate();
      }
      if (b.kind == BindingKind::Int || b.kind == BindingKind::Bool || b.kind == BindingKind::Constexpr) {
        b.expr.validate();
      }
    }
  }
  for (int32_t s : outputs) check_slot(s);
}

}  // namespace torch_tile
