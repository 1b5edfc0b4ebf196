// Runs a launch plan for one call: allocations, then each launch with its
// grid, specialization key, cached variant and packed parameters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "call_args.h"
#include "cuda_driver_api.h"
#include "kernel_cache.h"
#include "launch_plan.h"

namespace torch_tile {

// What the framework binding provides for one call.
class LaunchHost {
 public:
  virtual ~LaunchHost() = default;
  // Allocates output `slot` (shape already evaluated) and returns its view.
  virtual TensorArg allocate(int slot, const AllocStep& step, const int64_t* shape, int rank) = 0;
  // Device memory that stays valid until the call returns (stream-ordered).
  virtual void* scratch(size_t bytes, size_t alignment) = 0;
  virtual cu::CUstream stream() = 0;
};

// A launch ready for cuLaunchKernelEx: config, function, packed parameters.
struct PreparedLaunch {
  cu::CUlaunchConfig config{};
  cu::CUlaunchAttribute attrs[4];
  cu::CUfunction function = nullptr;
  cu::CUtensorMap tensor_maps[kMaxTensorMaps];  // descriptors, passed by value
  uint64_t storage[kMaxRuntimeParams + 2];      // every other parameter, one word each
  int8_t map_of_param[kMaxRuntimeParams + 2];   // >= 0: the parameter is that tensor map
  void* params[kMaxRuntimeParams + 2];
  size_t num_params = 0;

  // Points params/attrs at this object's own storage (after a copy).
  void bind();
};

// Evaluates grid and bindings, finds or compiles the variant, packs the
// parameters. Returns false for an empty grid (nothing to launch).
bool prepare_launch(const LaunchStep& step, CallArgs& args, LaunchHost& host, Compiler& compiler,
                    const char* op, PreparedLaunch& out);
void submit_launch(const PreparedLaunch& launch, const LaunchStep& step, const char* op);

// Allocates the plan's outputs into the slots after the arguments.
void allocate_outputs(const LaunchPlan& plan, CallArgs& args, LaunchHost& host, const char* op_name);

// Runs the whole plan (allocations, then launches); `last`, when given, receives the last launch made
// (benchmarks replay it to measure the bare driver floor).
void run_plan(const LaunchPlan& plan, CallArgs& args, LaunchHost& host, Compiler& compiler,
              const char* op_name, PreparedLaunch* last = nullptr);

// Evaluates a launch step's specialization key (exposed for tests/benchmarks).
void compute_key(const LaunchStep& step, const CallArgs& args, SpecializationKey& key);

}  // namespace torch_tile
