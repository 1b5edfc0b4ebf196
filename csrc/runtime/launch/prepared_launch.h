// A launch ready for cuLaunchKernelEx: config, function, packed parameters.
// Self-contained, so an observer may copy one and replay it (the driver-floor
// benchmark) after calling bind() on the copy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/cuda/cuda_driver_api.h"
#include "runtime/plan/limits.h"

namespace torch_tile {

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

}  // namespace torch_tile
