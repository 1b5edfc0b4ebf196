// Per-device limits read once from the driver (grid limits, shared memory,
// compute capability), and making the device's primary context current.
#pragma once

#include <cstdint>

#include "runtime/cuda/cuda_driver_api.h"

namespace torch_tile {

struct DeviceInfo {
  int64_t max_grid[3] = {0, 0, 0};
  int32_t max_shared_optin = 0;
  int32_t capability = 0;  // major * 10 + minor, e.g. 90
};

// Cached after the first call for that device; thread-safe.
const DeviceInfo& device_info(int device);

// The CUDA ordinal of the context current on this thread, or -1 when none is.
// The launch path's "is the device already current?" test: one driver call,
// cheaper than cudaGetDevice.
int current_context_device();

// Ensures a context is current on this thread: the caller's framework normally
// made `device`'s primary context current already; a fresh thread may have none.
void ensure_context(int device);

}  // namespace torch_tile
