#include "runtime/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "runtime/error.h"

namespace torch_tile {
namespace {

std::atomic<bool> g_loaded{false};
std::atomic<const CudaDriver*> g_override{nullptr};

template <class Fn>
void resolve(void* lib, const char* name, Fn*& slot) {
  // Every entry point used here is exported under its plain cuda.h name.
  if (void* sym = dlsym(lib, name)) {
    slot = reinterpret_cast<Fn*>(sym);
    return;
  }
  fail(ErrorKind::Runtime, std::string("torch_tile: libcuda.so.1 has no symbol ") + name +
                               " (driver too old? CUDA 12 or newer is required)");
}

CudaDriver load_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    fail(ErrorKind::Runtime,
         std::string("torch_tile: cannot load the CUDA driver libcuda.so.1 (") + dlerror() +
             "); launching a kernel needs an NVIDIA GPU and driver");
  }
  CudaDriver d{};
  resolve(lib, "cuInit", d.cuInit);
  resolve(lib, "cuGetErrorString", d.cuGetErrorString);
  resolve(lib, "cuGetErrorName", d.cuGetErrorName);
  resolve(lib, "cuDeviceGet", d.cuDeviceGet);
  resolve(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute);
  resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain);
  resolve(lib, "cuCtxGetCurrent", d.cuCtxGetCurrent);
  resolve(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent);
  resolve(lib, "cuCtxGetDevice", d.cuCtxGetDevice);
  resolve(lib, "cuModuleLoadData", d.cuModuleLoadData);
  resolve(lib, "cuModuleUnload", d.cuModuleUnload);
  resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction);
  resolve(lib, "cuFuncGetAttribute", d.cuFuncGetAttribute);
  resolve(lib, "cuFuncSetAttribute", d.cuFuncSetAttribute);
  resolve(lib, "cuFuncSetCacheConfig", d.cuFuncSetCacheConfig);
  d.cuFuncGetParamInfo = reinterpret_cast<decltype(d.cuFuncGetParamInfo)>(dlsym(lib, "cuFuncGetParamInfo"));
  resolve(lib, "cuLaunchKernelEx", d.cuLaunchKernelEx);
  resolve(lib, "cuOccupancyMaxPotentialClusterSize", d.cuOccupancyMaxPotentialClusterSize);
  resolve(lib, "cuTensorMapEncodeTiled", d.cuTensorMapEncodeTiled);
  d.check(d.cuInit(0), "cuInit");
  return d;
}

}  // namespace

std::string CudaDriver::describe(cu::CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != cu::CUDA_SUCCESS) name = "?";
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != cu::CUDA_SUCCESS) text = "";
  return std::string(name) + " (" + std::to_string(result) + "): " + text;
}

void CudaDriver::fail_with(cu::CUresult result, const char* what) const {
  fail(ErrorKind::Runtime, std::string("torch_tile: ") + what + " failed: " + describe(result));
}

const CudaDriver& cuda_driver() {
  if (const CudaDriver* fake = g_override.load(std::memory_order_acquire)) return *fake;
  // A function-local static is initialised once, thread-safely; a failed load
  // throws and is retried by the next call.
  static const CudaDriver driver = load_driver();
  g_loaded.store(true, std::memory_order_relaxed);
  return driver;
}

bool cuda_driver_loaded() {
  return g_loaded.load(std::memory_order_relaxed) || g_override.load(std::memory_order_acquire) != nullptr;
}

void override_cuda_driver(const CudaDriver* fake) { g_override.store(fake, std::memory_order_release); }

}  // namespace torch_tile
