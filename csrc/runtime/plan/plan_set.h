// The launch plans of one op. Selection is lock-free (plans are published
// once and never change); adding a plan after a retrace takes a mutex.
// While every two plans are disjoint as their guards show (plans_disjoint:
// true of plans traced from one body, which differ in a dtype, a rank or a
// branch taken), any matching plan is the plan, and selection tries the last
// one selected first (a monomorphic inline cache, as for variants): an op
// with many plans (dtypes, a bundle's shapes) costs one match per call while
// its calls keep to one case. Once a plan is added that may overlap another
// (e.g. plans of an older body installed over traced ones), selection keeps
// the order plans were added in: the first that matches.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/plan/call_args.h"
#include "runtime/fork_safe_mutex.h"
#include "runtime/plan/launch_plan.h"
#include "runtime/plan/limits.h"

namespace torch_tile {

class PlanSet {
 public:
  // The plan whose guards hold for `args` (see above for which one), or nullptr.
  const LaunchPlan* select(const CallArgs& args) const;
  // Publishes a plan; throws when the op has too many.
  const LaunchPlan* add(std::unique_ptr<LaunchPlan> plan);
  int size() const { return count_.load(std::memory_order_acquire); }
  // Whether add() would throw: the op keeps kMaxPlans plans.
  bool full() const { return size() >= kMaxPlans; }
  // Plan `i` (0 <= i < size()), in the order they were added.
  const LaunchPlan& at(int i) const { return *plans_[size_t(i)].load(std::memory_order_acquire); }
  // Forgets every plan (the next call of each case traces again, or plans are
  // installed anew). Plans stay allocated: a concurrent select may still read one.
  void clear();
  // Serialises retracing, so that concurrent first calls trace once; held
  // while the body runs in Python, so a forked child gets it free.
  ForkSafeMutex& trace_mutex() { return trace_mutex_; }

 private:
  std::array<std::atomic<const LaunchPlan*>, kMaxPlans> plans_{};
  std::atomic<int> count_{0};
  std::atomic<bool> may_overlap_{false};  // set before the plan that made it true is published
  // An index, checked against count_; on its own cache line: it is written when an op's calls change case.
  alignas(64) mutable std::atomic<int> last_selected_{0};
  std::mutex add_mutex_;
  ForkSafeMutex trace_mutex_;
  std::vector<std::unique_ptr<LaunchPlan>> owned_;
};

bool plan_matches(const LaunchPlan& plan, const CallArgs& args);
// Whether no call can satisfy both plans, as their guards alone show: a tensor
// argument's dtype or rank differs, their Tensor[] layouts differ, or a guard
// of one contradicts a guard of the other (Expr::contradicts).
bool plans_disjoint(const LaunchPlan& a, const LaunchPlan& b);
// Why `plan` does not serve this call ("" if it does): its first failing
// guard, for the message of a process that cannot trace.
std::string plan_mismatch(const LaunchPlan& plan, const CallArgs& args);

}  // namespace torch_tile
