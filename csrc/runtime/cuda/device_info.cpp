#include "runtime/cuda/device_info.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/error.h"
#include "runtime/plan/limits.h"

namespace torch_tile {
namespace {

std::array<DeviceInfo, kMaxDevices> g_info;
std::array<std::atomic<bool>, kMaxDevices> g_ready{};
std::mutex g_mutex;

void check_ordinal(int device) {
  if (device < 0 || device >= kMaxDevices) {
    fail(ErrorKind::Value, "torch_tile supports CUDA devices 0.." + std::to_string(kMaxDevices - 1) +
                               ", got device " + std::to_string(device));
  }
}

}  // namespace

const DeviceInfo& device_info(int device) {
  check_ordinal(device);
  if (g_ready[device].load(std::memory_order_acquire)) return g_info[device];
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_ready[device].load(std::memory_order_relaxed)) {
    const CudaDriver& d = cuda_driver();
    cu::CUdevice dev = 0;
    d.check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    auto attr = [&](int which, const char* what) {
      int v = 0;
      d.check(d.cuDeviceGetAttribute(&v, which, dev), what);
      return v;
    };
    DeviceInfo info;
    info.max_grid[0] = attr(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "cuDeviceGetAttribute(MAX_GRID_DIM_X)");
    info.max_grid[1] = attr(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "cuDeviceGetAttribute(MAX_GRID_DIM_Y)");
    info.max_grid[2] = attr(cu::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "cuDeviceGetAttribute(MAX_GRID_DIM_Z)");
    info.max_shared_optin = attr(cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                 "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
    info.capability = attr(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuDeviceGetAttribute(CC_MAJOR)") * 10 +
                      attr(cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuDeviceGetAttribute(CC_MINOR)");
    g_info[device] = info;
    g_ready[device].store(true, std::memory_order_release);
  }
  return g_info[device];
}

int current_context_device() {
  const CudaDriver& d = cuda_driver();
  cu::CUcontext ctx = nullptr;
  if (d.cuCtxGetCurrent(&ctx) != cu::CUDA_SUCCESS || ctx == nullptr) return -1;
  // A thread keeps one context current for long stretches: remember its ordinal.
  thread_local cu::CUcontext last_ctx = nullptr;
  thread_local int last_device = -1;
  if (ctx != last_ctx) {
    cu::CUdevice dev = 0;
    if (d.cuCtxGetDevice(&dev) != cu::CUDA_SUCCESS) return -1;
    last_ctx = ctx;
    last_device = int(dev);  // CUdevice handles are the ordinals
  }
  return last_device;
}

void ensure_context(int device) {
  const CudaDriver& d = cuda_driver();
  cu::CUcontext ctx = nullptr;
  d.check(d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx != nullptr) return;
  check_ordinal(device);
  cu::CUdevice dev = 0;
  d.check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
  d.check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  d.check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

}  // namespace torch_tile
