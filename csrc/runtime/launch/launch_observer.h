// Watches the phases of tile-op calls made on this thread. Benchmarks and
// probes (csrc/testing) install one; production code never does, and each
// phase boundary then costs one predictable branch. This keeps the launch
// path's internals private: a benchmark observes real calls instead of
// re-implementing them step by step.
#pragma once

namespace torch_tile {

struct PreparedLaunch;

// Phase boundaries of one call, in order (a plan with several launches
// repeats LaunchPrepared/LaunchSubmitted per launch).
enum class CallPhase : int {
  ArgumentsRead,     // arguments read from the stack and checked
  DeviceSet,         // the tensors' device is current
  PlanSelected,      // guards evaluated (or a plan traced)
  OutputsAllocated,  // allocation steps done
  LaunchPrepared,    // grid, key, variant and parameters ready
  LaunchSubmitted,   // cuLaunchKernelEx returned
  OutputsPushed,     // results are on the stack
  Count_,
};

class LaunchObserver {
 public:
  virtual ~LaunchObserver() = default;
  virtual void phase(CallPhase p) = 0;
  // Each launch, once submitted (the prepared launch may be copied and replayed).
  virtual void launched(const PreparedLaunch& launch) {}
};

// This thread's observer, or nullptr.
LaunchObserver* launch_observer();

// Installs `observer` on this thread for the scope's lifetime.
class ScopedLaunchObserver {
 public:
  explicit ScopedLaunchObserver(LaunchObserver* observer);
  ~ScopedLaunchObserver();
  ScopedLaunchObserver(const ScopedLaunchObserver&) = delete;
  ScopedLaunchObserver& operator=(const ScopedLaunchObserver&) = delete;

 private:
  LaunchObserver* previous_;
};

}  // namespace torch_tile
