#include "compiled_kernel.h"

#include "cuda_driver.h"
#include "device_info.h"
#include "error.h"

namespace torch_tile {

CompiledKernel::CompiledKernel(KernelBinary binary) : binary_(std::move(binary)) {}

CompiledKernel::~CompiledKernel() {
  if (!cuda_driver_loaded()) return;
  const CudaDriver& d = cuda_driver();
  for (cu::CUmodule m : modules_) {
    // At interpreter exit the driver may already be shut down; nothing to do then.
    if (m != nullptr) (void)d.cuModuleUnload(m);
  }
}

// A cluster launch the device cannot schedule (too many CTAs for the kernel's
// shared memory and warps) would fail at every launch with a generic driver
// error; say why once, at load.
void CompiledKernel::check_cluster_fits(cu::CUfunction f, int device) const {
  const CudaDriver& d = cuda_driver();
  cu::CUlaunchConfig config{};
  config.gridDimX = unsigned(binary_.num_ctas);
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = unsigned(32 * binary_.num_warps);
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = unsigned(binary_.shared_mem);
  int max_cluster = 0;
  const cu::CUresult r = d.cuOccupancyMaxPotentialClusterSize(&max_cluster, f, &config);
  if (r == cu::CUDA_SUCCESS && max_cluster >= binary_.num_ctas) return;
  if (r != cu::CUDA_SUCCESS) d.fail_with(r, "cuOccupancyMaxPotentialClusterSize");
  fail(ErrorKind::Value, "kernel " + binary_.name + " is compiled for clusters of " +
                             std::to_string(binary_.num_ctas) + " CTAs (num_ctas), but device " +
                             std::to_string(device) + " can schedule at most " + std::to_string(max_cluster) +
                             " with its " + std::to_string(binary_.shared_mem) + " bytes of shared memory and " +
                             std::to_string(binary_.num_warps) + " warps; use a smaller num_ctas");
}

namespace {

// A module being loaded: unloaded again unless handed over, so no failed check
// after cuModuleLoadData leaks it.
class PendingModule {
 public:
  explicit PendingModule(const CudaDriver& d) : d_(d) {}
  ~PendingModule() {
    if (module_ != nullptr) (void)d_.cuModuleUnload(module_);
  }
  PendingModule(const PendingModule&) = delete;
  PendingModule& operator=(const PendingModule&) = delete;
  cu::CUmodule* out() { return &module_; }
  cu::CUmodule get() const { return module_; }
  cu::CUmodule release() {
    const cu::CUmodule m = module_;
    module_ = nullptr;
    return m;
  }

 private:
  const CudaDriver& d_;
  cu::CUmodule module_ = nullptr;
};

}  // namespace

cu::CUfunction CompiledKernel::load(int device) {
  std::lock_guard<std::mutex> lock(load_mutex_);
  if (cu::CUfunction f = functions_[device].load(std::memory_order_acquire)) return f;
  const CudaDriver& d = cuda_driver();
  const DeviceInfo& info = device_info(device);
  if (binary_.shared_mem > info.max_shared_optin) {
    fail(ErrorKind::Value, "kernel " + binary_.name + " needs " + std::to_string(binary_.shared_mem) +
                               " bytes of shared memory; device " + std::to_string(device) +
                               " allows " + std::to_string(info.max_shared_optin));
  }
  PendingModule module(d);
  d.check(d.cuModuleLoadData(module.out(), binary_.cubin.data()), "cuModuleLoadData");
  cu::CUfunction f = nullptr;
  d.check(d.cuModuleGetFunction(&f, module.get(), binary_.name.c_str()), "cuModuleGetFunction");
  // Shared memory above 48 KB must be opted into, once per function (as Triton does).
  if (binary_.shared_mem > 49152) {
    int static_shared = 0;
    d.check(d.cuFuncGetAttribute(&static_shared, cu::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
            "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
    d.check(d.cuFuncSetCacheConfig(f, cu::CU_FUNC_CACHE_PREFER_SHARED), "cuFuncSetCacheConfig");
    d.check(d.cuFuncSetAttribute(f, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 info.max_shared_optin - static_shared),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }
  if (binary_.num_ctas == 16) {
    d.check(d.cuFuncSetAttribute(f, cu::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)");
  }
  if (binary_.num_ctas > 1) check_cluster_fits(f, device);
  modules_[device] = module.release();
  functions_[device].store(f, std::memory_order_release);
  return f;
}

}  // namespace torch_tile
