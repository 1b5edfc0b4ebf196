// libcuda, opened with dlopen on first use: building and importing torch_tile
// need no GPU, no nvcc and no CUDA toolkit.
#pragma once

#include <string>

#include "runtime/cuda/cuda_driver_api.h"

namespace torch_tile {

struct CudaDriver {
  cu::CUresult (*cuInit)(unsigned int);
  cu::CUresult (*cuGetErrorString)(cu::CUresult, const char**);
  cu::CUresult (*cuGetErrorName)(cu::CUresult, const char**);
  cu::CUresult (*cuDeviceGet)(cu::CUdevice*, int);
  cu::CUresult (*cuDeviceGetAttribute)(int*, int, cu::CUdevice);
  cu::CUresult (*cuDevicePrimaryCtxRetain)(cu::CUcontext*, cu::CUdevice);
  cu::CUresult (*cuCtxGetCurrent)(cu::CUcontext*);
  cu::CUresult (*cuCtxSetCurrent)(cu::CUcontext);
  cu::CUresult (*cuCtxGetDevice)(cu::CUdevice*);
  cu::CUresult (*cuModuleLoadData)(cu::CUmodule*, const void*);
  cu::CUresult (*cuModuleUnload)(cu::CUmodule);
  cu::CUresult (*cuModuleGetFunction)(cu::CUfunction*, cu::CUmodule, const char*);
  cu::CUresult (*cuFuncGetAttribute)(int*, int, cu::CUfunction);
  cu::CUresult (*cuFuncSetAttribute)(cu::CUfunction, int, int);
  cu::CUresult (*cuFuncSetCacheConfig)(cu::CUfunction, int);
  // (function, index, offset, size); nullptr on drivers older than CUDA 12.4 (checks are skipped there).
  cu::CUresult (*cuFuncGetParamInfo)(cu::CUfunction, size_t, size_t*, size_t*);
  cu::CUresult (*cuLaunchKernelEx)(const cu::CUlaunchConfig*, cu::CUfunction, void**, void**);
  cu::CUresult (*cuOccupancyMaxPotentialClusterSize)(int*, cu::CUfunction, const cu::CUlaunchConfig*);
  // (map, dataType, rank, globalAddress, globalDim, globalStrides, boxDim,
  //  elementStrides, interleave, swizzle, l2Promotion, oobFill)
  cu::CUresult (*cuTensorMapEncodeTiled)(cu::CUtensorMap*, int, uint32_t, void*, const uint64_t*, const uint64_t*,
                                         const uint32_t*, const uint32_t*, int, int, int, int);

  // Throws torch_tile::Error (Runtime) naming `what` and the driver's message.
  void check(cu::CUresult result, const char* what) const {
    if (result != cu::CUDA_SUCCESS) fail_with(result, what);
  }
  [[noreturn]] void fail_with(cu::CUresult result, const char* what) const;
  std::string describe(cu::CUresult result) const;
};

// The process-wide driver table; loads libcuda.so.1 on first call and throws a
// clear error when it is missing (e.g. on a machine without a GPU).
const CudaDriver& cuda_driver();

// True once cuda_driver() has loaded successfully, without trying to load.
bool cuda_driver_loaded();

// Tests without a GPU (csrc/testing): `fake` serves every later cuda_driver()
// call until replaced again; nullptr goes back to libcuda. The table must
// outlive its use.
void override_cuda_driver(const CudaDriver* fake);

}  // namespace torch_tile
