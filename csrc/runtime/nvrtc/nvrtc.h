// NVRTC, opened with dlopen on first use: compiles CUDA C++ kernels to cubins
// for a target architecture, with no GPU and no CUDA toolkit (the torch wheel
// ships libnvrtc, and libtorch_cuda has it loaded already).
#pragma once

#include <string>
#include <vector>

namespace torch_tile {

// One kernel of a CUDA C++ translation unit to compile.
struct CudaSource {
  std::string code;             // the translation unit
  std::string name_expression;  // the kernel, as C++ names it: "scale" or "scale<float, 128>"
  std::vector<std::string> options;  // extra NVRTC options: "-I<dir>", "-DNAME=1", "-std=c++17", ...
  std::string label;            // who asks, for errors: "op 'demo::scale', kernel scale<float, 128>"
};

struct CompiledCudaSource {
  std::string cubin;         // sm_<capability> machine code, loadable with cuModuleLoadData
  std::string lowered_name;  // the entry point's symbol in the cubin (mangled for templates)
  std::string log;           // NVRTC's warnings, if any
};

// Compiles `source` for sm_<capability>. A compile error is a torch_tile::Error
// (Value) carrying NVRTC's log and the label; a missing NVRTC is a Runtime
// error saying where it was looked for. Thread-safe (NVRTC programs are
// independent).
CompiledCudaSource compile_cuda_source(const CudaSource& source, int capability);

// The CUDA headers beside the NVRTC library in use (the torch wheel's, or a
// toolkit's), for kernels that include <cuda_fp16.h> and friends; empty when
// there are none. Loads NVRTC.
std::vector<std::string> nvrtc_include_dirs();

// NVRTC's version as "major.minor" (loads it).
std::string nvrtc_version();

}  // namespace torch_tile
