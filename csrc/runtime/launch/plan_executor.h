// Runs a launch plan for one call: allocations, then each launch with its
// grid, specialization key, cached variant and packed parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>

#include "runtime/plan/call_args.h"
#include "runtime/cuda/cuda_driver_api.h"
#include "runtime/kernels/kernel_cache.h"
#include "runtime/launch/launch_observer.h"
#include "runtime/plan/launch_plan.h"
#include "runtime/launch/prepared_launch.h"

namespace torch_tile {

// What the framework binding provides for one call.
class LaunchHost {
 public:
  virtual ~LaunchHost() = default;
  // Allocates output `slot` (shape already evaluated) and returns its view.
  virtual TensorArg allocate(int slot, const AllocStep& step, const int64_t* shape, int rank) = 0;
  // Notes that `slot` is `step`'s view, `offset` elements into its base (the
  // runtime has filled args.slots[slot]); a host makes a tensor of it only if
  // one is needed (an ATen step's argument, an output).
  virtual void add_view(int slot, const ViewStep& step, int64_t offset) = 0;
  // Runs an ATen step; its results become slots first_slot, first_slot + 1, ...
  // (the host fills args.slots for them).
  virtual void run_aten(const AtenStep& step, CallArgs& args, int first_slot) = 0;
  // The `step.count` elements of tensor `slot` as int64, into `out` (a Read step): read on the host's stream
  // after the work before it, which it waits for (as eager `.item()` and `.tolist()` do).
  virtual void read_values(int slot, const ReadStep& step, int64_t* out) = 0;
  // Constant `index` of the plan as tensor `slot`: the binding took the plan's constants as it selected the
  // plan, before any step ran (TorchLaunchHost::take_constants).
  virtual TensorArg constant(int slot, int index) = 0;
  // Device memory that stays valid until the call returns (stream-ordered).
  virtual void* scratch(size_t bytes, size_t alignment) = 0;
  virtual cu::CUstream stream() = 0;
};

// Thrown by run_plan where a Check step does not hold for the call: the call leaves the plan (the op body runs
// it instead). Nothing the plan did before it wrote the op's arguments.
class CheckNotHeld : public std::exception {
 public:
  explicit CheckNotHeld(const CheckStep& step) : step_(&step) {}
  const CheckStep& step() const { return *step_; }
  const char* what() const noexcept override { return "a plan's data check does not hold for this call"; }

 private:
  const CheckStep* step_;
};

// Receives the specialization key of each launch of a dry run (which
// variants a call needs, e.g. to compile them into a bundle ahead of time).
class KeySink {
 public:
  virtual ~KeySink() = default;
  virtual void key(const LaunchStep& step, const SpecializationKey& key) = 0;
};

// Runs the plan's steps in order on the host's stream;
// `observer` (usually none) sees each phase and launch. With `keys`, a dry
// run: every step but the launches runs, and each launch with a non-empty
// grid hands its key to `keys` instead (no variant is looked up or compiled,
// no device is touched).
void run_plan(const LaunchPlan& plan, CallArgs& args, LaunchHost& host, const char* op_name,
              LaunchObserver* observer, KeySink* keys = nullptr);

// Evaluates a launch step's specialization key (errors name `op`).
void compute_key(const LaunchStep& step, const CallArgs& args, const char* op, SpecializationKey& key);

}  // namespace torch_tile
