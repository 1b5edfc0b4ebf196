// The subset of the CUDA driver API (cuda.h) that torch_tile uses, declared
// here so that building needs no CUDA toolkit. Layouts and values are the
// driver's stable ABI (CUDA 12+); names match cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace torch_tile::cu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;

constexpr CUresult CUDA_SUCCESS = 0;

// CUdevice_attribute
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUfunction_attribute
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14;
constexpr int CU_FUNC_CACHE_PREFER_SHARED = 1;

// CUlaunchAttributeID
constexpr int CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;
constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5;
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
constexpr int CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1;

union CUlaunchAttributeValue {
  char pad[64];
  int cooperative;
  struct {
    unsigned int x, y, z;
  } clusterDim;
  int clusterSchedulingPolicyPreference;
  int programmaticStreamSerializationAllowed;
};

struct CUlaunchAttribute {
  int id;
  char pad[8 - sizeof(int)];
  CUlaunchAttributeValue value;
};

struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned int numAttrs;
};

// Tensor maps (TMA descriptors): an opaque 128-byte value. cuda.h aligns it
// to 64 bytes; cuLaunchKernelEx copies parameter values from the host, so 16
// is enough here (measured: same results as Triton's launcher) and the launch
// path's stack frames, which hold maps, need no realignment.
struct alignas(16) CUtensorMap {
  uint64_t opaque[16];
};
// CUtensorMapInterleave, CUtensorMapL2promotion, CUtensorMapFloatOOBfill
constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2;
constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;
constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1;

static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap ABI");
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute ABI");
static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig ABI");

}  // namespace torch_tile::cu
