#include "runtime/plan/plan_set.h"

#include "runtime/counters.h"
#include "runtime/error.h"

namespace torch_tile {

namespace {

// The first guard of `plan` that fails for `args`; with `why`, described
// there (the steady state passes none and builds no text).
bool mismatch(const LaunchPlan& plan, const CallArgs& args, std::string* why) {
  // Tensor[] items take slots: a plan serves only calls that fill as many (its guards say which lists).
  if (args.num_slots != plan.first_made(args.num_args)) {
    if (why) *why = "its lists hold " + std::to_string(plan.num_list_tensors) + " tensors in all, the call's " +
                    std::to_string(args.num_slots - args.num_args);
    return true;
  }
  for (const TensorGuard& g : plan.tensor_guards) {
    const TensorArg& t = args.slots[g.arg];
    if (t.sizes == nullptr || t.ndim != g.ndim || pack_dtype(t.dtype) != g.dtype) {
      if (why) *why = "tensor slot " + std::to_string(g.arg) + " must have rank " + std::to_string(g.ndim) +
                      " and DLPack dtype (code " + std::to_string(g.dtype & 0xFF) + ", " +
                      std::to_string((g.dtype >> 8) & 0xFF) + " bits)";
      return true;
    }
  }
  const EvalContext ctx = args.eval();
  for (const Expr& guard : plan.guards) {
    try {
      if (guard.evaluate(ctx) == 0) {
        if (why) *why = "guard `" + guard.text + "` fails";
        return true;
      }
    } catch (const Error& e) {
      if (why) *why = "guard `" + guard.text + "` cannot be evaluated: " + e.what();
      return true;  // e.g. overflow in another regime: let a retrace report it
    }
  }
  return false;
}

}  // namespace

bool plan_matches(const LaunchPlan& plan, const CallArgs& args) { return !mismatch(plan, args, nullptr); }

std::string plan_mismatch(const LaunchPlan& plan, const CallArgs& args) {
  std::string why;
  mismatch(plan, args, &why);
  return why;
}

bool plans_disjoint(const LaunchPlan& a, const LaunchPlan& b) {
  if (a.num_list_tensors != b.num_list_tensors) return true;
  for (const TensorGuard& g : a.tensor_guards) {
    for (const TensorGuard& h : b.tensor_guards) {
      if (g.arg == h.arg && (g.dtype != h.dtype || g.ndim != h.ndim)) return true;
    }
  }
  for (const Expr& g : a.guards) {
    for (const Expr& h : b.guards) {
      if (g.contradicts(h)) return true;
    }
  }
  return false;
}

const LaunchPlan* PlanSet::select(const CallArgs& args) const {
  const int n = count_.load(std::memory_order_acquire);
  const bool in_order = may_overlap_.load(std::memory_order_relaxed);  // acquired with count_
  const int first = in_order ? 0 : last_selected_.load(std::memory_order_relaxed);
  if (first < n) {
    const LaunchPlan* p = plans_[size_t(first)].load(std::memory_order_acquire);
    if (plan_matches(*p, args)) return p;
  }
  for (int i = 0; i < n; ++i) {
    if (i == first) continue;
    const LaunchPlan* p = plans_[size_t(i)].load(std::memory_order_acquire);
    if (plan_matches(*p, args)) {
      counters().plan_scans.fetch_add(1, std::memory_order_relaxed);
      if (!in_order) last_selected_.store(i, std::memory_order_relaxed);  // written only when the case changes
      return p;
    }
  }
  return nullptr;
}

const LaunchPlan* PlanSet::add(std::unique_ptr<LaunchPlan> plan) {
  std::lock_guard<std::mutex> lock(add_mutex_);
  const int n = count_.load(std::memory_order_relaxed);
  if (n >= kMaxPlans) {
    fail(ErrorKind::NotImplemented,
         "more than " + std::to_string(kMaxPlans) +
             " launch plans for one op: its guards take too many cases (sizes the body branches on, or values "
             "guarded one by one, such as an int argument used in float arithmetic)");
  }
  for (int i = 0; i < n && !may_overlap_.load(std::memory_order_relaxed); ++i) {
    if (!plans_disjoint(*plans_[size_t(i)].load(std::memory_order_relaxed), *plan)) {
      may_overlap_.store(true, std::memory_order_relaxed);  // published by count_'s release below
    }
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
  may_overlap_.store(false, std::memory_order_relaxed);  // the plans added next are checked again
}

}  // namespace torch_tile
