// One compiled variant of a kernel: the frontend's binary and launch metadata,
// plus the CUfunction loaded from it on each device that ran it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_driver_api.h"
#include "runtime/plan/limits.h"
#include "runtime/cuda/tensor_map.h"

namespace torch_tile {

// How a runtime parameter is passed to the kernel (its width in the compiled
// signature; Triton's `i32`, `i64`, `fp32`, `*fp16`, ...; `nvTmaDesc`: a
// CUtensorMap by value).
enum class ParamType : int32_t { Pointer = 0, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, TensorMap };

// Bytes the kernel takes for one parameter of that type (a CUtensorMap: 128).
inline int param_type_bytes(ParamType t) {
  switch (t) {
    case ParamType::I8: case ParamType::U8: return 1;
    case ParamType::I16: case ParamType::U16: return 2;
    case ParamType::I32: case ParamType::U32: case ParamType::F32: return 4;
    case ParamType::TensorMap: return 128;
    default: return 8;  // pointers, 64-bit ints and floats
  }
}

// What a frontend (Triton) hands back from a compile.
struct KernelBinary {
  std::string name;   // entry point in the cubin
  std::string cubin;  // the binary, loaded with cuModuleLoadData
  int32_t block[3] = {128, 1, 1};  // threads per block, x y z (Triton: 32 * num_warps, 1, 1)
  int32_t num_ctas = 1;
  int32_t shared_mem = 0;  // dynamic shared memory, bytes
  bool launch_pdl = false;
  bool launch_cooperative_grid = false;
  int64_t global_scratch_size = 0;  // bytes per program (× grid)
  int64_t global_scratch_align = 1;
  int64_t profile_scratch_size = 0;
  int64_t profile_scratch_align = 1;
  // Values passed at launch, by index into the launch bindings; Triton drops
  // constexprs (including ints specialised to 1). A tensor descriptor binding
  // passes several values: its map, then its shape and strides.
  std::vector<int32_t> runtime_params;
  std::vector<ParamType> runtime_param_types;  // parallel to runtime_params
  // Parallel to runtime_params: -1 the binding's value (or a descriptor's
  // map); k >= 0 component k of a descriptor (shape[k], then strides[k - rank]).
  std::vector<int8_t> runtime_param_parts;
  std::vector<TensorMapMeta> tensor_maps;  // one per TensorMap parameter, in order
};

// Why CUDA cannot launch a block of these (x, y, z) threads on any device so
// far, or "" when it can.
std::string block_problem(int64_t x, int64_t y, int64_t z);

// Refuses launch metadata the launch path cannot follow (lengths that differ,
// more values than it passes, a descriptor's parts away from its map, a block
// CUDA cannot launch).
void check_kernel_binary(const KernelBinary& binary);

class CompiledKernel {
 public:
  // `binary` was compiled for sm_<capability>.
  CompiledKernel(KernelBinary binary, int capability);
  ~CompiledKernel();
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;

  const KernelBinary& binary() const { return binary_; }
  int capability() const { return capability_; }

  // The function on `device`, loading the module into that device's primary
  // context on first use (the context must be current on this thread).
  cu::CUfunction function(int device) {
    cu::CUfunction f = functions_[device].load(std::memory_order_acquire);
    return f != nullptr ? f : load(device);
  }

 private:
  cu::CUfunction load(int device);
  void check_cluster_fits(cu::CUfunction f, int device) const;
  void check_block_fits(cu::CUfunction f) const;
  void check_parameters(cu::CUfunction f) const;

  KernelBinary binary_;
  const int capability_;
  std::array<std::atomic<cu::CUfunction>, kMaxDevices> functions_{};
  std::array<cu::CUmodule, kMaxDevices> modules_{};
  std::mutex load_mutex_;
};

}  // namespace torch_tile
