#include "plan_set.h"

#include "error.h"

namespace torch_tile {

bool plan_matches(const LaunchPlan& plan, const CallArgs& args) {
  for (const TensorGuard& g : plan.tensor_guards) {
    const TensorArg& t = args.slots[g.arg];
    if (t.sizes == nullptr || t.ndim != g.ndim || pack_dtype(t.dtype) != g.dtype) return false;
  }
  const EvalContext ctx = args.eval();
  for (const Expr& guard : plan.guards) {
    try {
      if (guard.evaluate(ctx) == 0) return false;
    } catch (const Error&) {
      return false;  // e.g. overflow in another regime: let a retrace report it
    }
  }
  return true;
}

const LaunchPlan* PlanSet::select(const CallArgs& args) const {
  const int n = count_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    const LaunchPlan* p = plans_[i].load(std::memory_order_acquire);
    if (plan_matches(*p, args)) return p;
  }
  return nullptr;
}

const LaunchPlan* PlanSet::add(std::unique_ptr<LaunchPlan> plan) {
  std::lock_guard<std::mutex> lock(add_mutex_);
  const int n = count_.load(std::memory_order_relaxed);
  if (n >= kMaxPlans) {
    fail(ErrorKind::NotImplemented,
         "more than " + std::to_string(kMaxPlans) +
             " launch plans for one op: its body branches on sizes in too many ways");
  }
  const LaunchPlan* raw = plan.get();
  owned_.push_back(std::move(plan));
  plans_[n].store(raw, std::memory_order_release);
  count_.store(n + 1, std::memory_order_release);
  return raw;
}

void PlanSet::clear() {
  std::lock_guard<std::mutex> lock(add_mutex_);
  count_.store(0, std::memory_order_release);
}

}  // namespace torch_tile
