#include "runtime/kernels/compiled_kernel.h"

#include <algorithm>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/device_info.h"
#include "runtime/error.h"

namespace torch_tile {

std::string block_problem(int64_t x, int64_t y, int64_t z) {
  // Each factor is checked before the product, which then stays small.
  if (x >= 1 && y >= 1 && z >= 1 && x <= 1024 && y <= 1024 && z <= 64 && x * y * z <= 1024) return "";
  return "a block of (" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) +
         ") threads; CUDA allows x and y up to 1024, z up to 64 and 1024 threads in all";
}

void check_kernel_binary(const KernelBinary& b) {
  const size_t n = b.runtime_params.size();
  if (b.runtime_param_types.size() != n || b.runtime_param_parts.size() != n) {
    fail(ErrorKind::Runtime, "kernel " + b.name + ": runtime_params, runtime_param_types and runtime_param_parts differ "
                             "in length");
  }
  if (n > size_t(kMaxRuntimeParams) || b.tensor_maps.size() > size_t(kMaxTensorMaps)) {
    fail(ErrorKind::NotImplemented, "kernel " + b.name + " takes " + std::to_string(n) + " values and " +
                                        std::to_string(b.tensor_maps.size()) + " tensor descriptors; torch_tile " +
                                        "supports at most " + std::to_string(kMaxRuntimeParams) + " and " +
                                        std::to_string(kMaxTensorMaps));
  }
  // The launch path reads a descriptor's shape and strides from its map's
  // values: each component must follow the map of its own binding.
  size_t maps = 0;
  int32_t map_binding = -1, map_rank = 0;
  for (size_t j = 0; j < n; ++j) {
    if (b.runtime_param_types[j] == ParamType::TensorMap) {
      if (maps == b.tensor_maps.size()) break;
      map_binding = b.runtime_params[j];
      map_rank = b.tensor_maps[maps++].rank;
    } else if (b.runtime_param_parts[j] >= 0 &&
               (b.runtime_params[j] != map_binding || b.runtime_param_parts[j] >= 2 * map_rank)) {
      fail(ErrorKind::Runtime, "kernel " + b.name + ": a descriptor's shape and strides must follow its map");
    }
  }
  const std::string block = block_problem(b.block[0], b.block[1], b.block[2]);
  if (!block.empty()) fail(ErrorKind::Runtime, "kernel " + b.name + ": " + block);
  for (const TensorMapMeta& m : b.tensor_maps) {
    if (m.rank < 1 || m.rank > kMaxTensorMapRank) {
      fail(ErrorKind::Runtime, "kernel " + b.name + ": a tensor descriptor of rank " + std::to_string(m.rank));
    }
  }
  if (size_t(std::count(b.runtime_param_types.begin(), b.runtime_param_types.end(), ParamType::TensorMap)) !=
      b.tensor_maps.size()) {
    fail(ErrorKind::Runtime, "kernel " + b.name + ": one tensor_maps entry per nvTmaDesc parameter expected");
  }
}

CompiledKernel::CompiledKernel(KernelBinary binary, int capability)
    : binary_(std::move(binary)), capability_(capability) {}

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
  config.blockDimX = unsigned(binary_.block[0]);
  config.blockDimY = unsigned(binary_.block[1]);
  config.blockDimZ = unsigned(binary_.block[2]);
  config.sharedMemBytes = unsigned(binary_.shared_mem);
  int max_cluster = 0;
  const cu::CUresult r = d.cuOccupancyMaxPotentialClusterSize(&max_cluster, f, &config);
  if (r == cu::CUDA_SUCCESS && max_cluster >= binary_.num_ctas) return;
  if (r != cu::CUDA_SUCCESS) d.fail_with(r, "cuOccupancyMaxPotentialClusterSize");
  fail(ErrorKind::Value, "kernel " + binary_.name + " is compiled for clusters of " +
                             std::to_string(binary_.num_ctas) + " CTAs (num_ctas), but device " +
                             std::to_string(device) + " can schedule at most " + std::to_string(max_cluster) +
                             " with its " + std::to_string(binary_.shared_mem) + " bytes of shared memory and " +
                             std::to_string(binary_.block[0] * binary_.block[1] * binary_.block[2]) +
                             " threads per block; use a smaller num_ctas");
}

// A block larger than the function allows (its __launch_bounds__, or its
// register use) would fail at every launch with a generic driver error; say
// why once, at load.
void CompiledKernel::check_block_fits(cu::CUfunction f) const {
  int max_threads = 0;
  if (cuda_driver().cuFuncGetAttribute(&max_threads, cu::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) !=
      cu::CUDA_SUCCESS) {
    return;  // the launch reports it, if it matters
  }
  const int64_t threads = int64_t(binary_.block[0]) * binary_.block[1] * binary_.block[2];
  if (threads <= max_threads) return;
  fail(ErrorKind::Value, "kernel " + binary_.name + " is launched with blocks of (" + std::to_string(binary_.block[0]) +
                             ", " + std::to_string(binary_.block[1]) + ", " + std::to_string(binary_.block[2]) +
                             ") = " + std::to_string(threads) + " threads, but it allows at most " +
                             std::to_string(max_threads) + " (its __launch_bounds__ or its register use)");
}

// Launch metadata that disagrees with the kernel's declaration (a bundle's, an
// op defined in C++ that declares an int where the kernel takes a long) would
// pass values at the wrong offsets: refuse it at load, from the driver's own
// parameter list. The launch passes the runtime parameters, then Triton's two
// scratch pointers, which other kernels do not declare.
void CompiledKernel::check_parameters(cu::CUfunction f) const {
  const CudaDriver& d = cuda_driver();
  if (d.cuFuncGetParamInfo == nullptr) return;
  const size_t n = binary_.runtime_param_types.size();
  std::vector<size_t> sizes;
  for (size_t offset = 0, size = 0; d.cuFuncGetParamInfo(f, sizes.size(), &offset, &size) == cu::CUDA_SUCCESS;) {
    sizes.push_back(size);
  }
  if (sizes.size() != n && sizes.size() != n + 2) {
    fail(ErrorKind::Value, "kernel " + binary_.name + " declares " + std::to_string(sizes.size()) +
                               " parameters, but the launch passes " + std::to_string(n));
  }
  for (size_t j = 0; j < sizes.size(); ++j) {
    const size_t expected = j < n ? size_t(param_type_bytes(binary_.runtime_param_types[j])) : sizeof(void*);
    if (sizes[j] != expected) {
      fail(ErrorKind::Value, "kernel " + binary_.name + ": parameter " + std::to_string(j) + " is declared " +
                                 std::to_string(sizes[j]) + " bytes wide, but the launch passes " +
                                 std::to_string(expected) + " bytes there");
    }
  }
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
  check_parameters(f);
  check_block_fits(f);
  // Shared memory above 48 KB, dynamic and static together (a CUDA C++ or TileLang kernel has both), must be
  // opted into, once per function (as Triton does).
  int static_shared = 0;
  d.check(d.cuFuncGetAttribute(&static_shared, cu::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
          "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  if (binary_.shared_mem + static_shared > info.max_shared_optin) {
    fail(ErrorKind::Value, "kernel " + binary_.name + " needs " + std::to_string(binary_.shared_mem) +
                               " bytes of dynamic and " + std::to_string(static_shared) +
                               " of static shared memory; device " + std::to_string(device) + " allows " +
                               std::to_string(info.max_shared_optin) + " in all");
  }
  if (binary_.shared_mem + static_shared > 49152) {
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
