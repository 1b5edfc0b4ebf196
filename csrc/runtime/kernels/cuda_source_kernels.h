// CUDA C++ kernels that the runtime compiles itself, with NVRTC and no Python:
// the kernels and launch configurations of ops defined in C++
// (csrc/include/torch_tile/op_definition.h), by stable id, and the Compiler of
// their frontend, "cuda_cpp". Also the two facts about CUDA C++ kernels that
// the Python frontend (torch_tile/frontends/cuda) reads from here rather than
// writing again: the specialization macros a variant sees and the C++ name of
// an element type.
#pragma once

#include <cstdint>
#include <array>
#include <string>
#include <vector>

#include "runtime/kernels/compiled_kernel.h"
#include "runtime/plan/launch_plan.h"

namespace torch_tile {

constexpr const char* kCudaCppFrontend = "cuda_cpp";

// Which bits of its arguments a CUDA C++ kernel's variants are keyed and
// compiled by (cuda_specialization_defines gives the macros of each).
enum class CudaSpecialization : int32_t {
  None = 0,    // dtypes and parameter widths only
  Triton = 1,  // Triton's: pointer 16-byte alignment, integer == 1 / % 16
  CuTile = 2,  // cuTile's array bits of each tensor (layout_key_word); integers unspecialised
};

// One __global__ function of a CUDA C++ translation unit.
struct CudaSourceKernel {
  std::string source;                // the translation unit's text
  std::string name;                  // the function's name, without template arguments
  std::vector<std::string> options;  // extra NVRTC options
  CudaSpecialization specialize = CudaSpecialization::None;
};

// A launch site's static part: what, besides the key's words, makes a variant.
struct CudaSourceLaunchConfig {
  int64_t kernel = 0;                       // register_cuda_source_kernel's id
  std::vector<std::string> template_args;   // C++ text of each template argument
  std::array<int32_t, 3> block{1, 1, 1};    // threads per block, x y z
  int32_t shared_mem = 0;                   // dynamic shared memory, bytes
  std::vector<BindingKind> kinds;           // per parameter: Tensor, Int, Bool or Float
  std::vector<ParamType> param_types;       // per parameter, as the kernel declares it
};

// Registers the kernel (once per content) with frontend "cuda_cpp" and returns
// its id, stable across processes (a hash of the content); the frontend's
// compiler is registered on first use.
int64_t register_cuda_source_kernel(const CudaSourceKernel& kernel);
// Registers the configuration (once per content); returns its id (a key's first word).
int64_t register_cuda_source_launch_config(const CudaSourceLaunchConfig& config);

// `name<args...>`, as C++ spells the instance.
std::string cuda_name_expression(const std::string& name, const std::vector<std::string>& template_args);

// The macros (NAME=0/1) a variant of a specialised kernel is compiled with,
// from its key (words[0] is the configuration; then one word per parameter).
// Triton's bits: TT_ALIGNED16_<i> for a pointer, TT_EQ1_<i> and TT_DIV16_<i>
// for an integer. With `layout` (tensors keyed by cuTile's array bits,
// layout_key_word), per tensor parameter i: TT_ALIGNED16_<i>, TT_DISJOINT_<i>
// and, per dimension d < 5, TT_STRIDE16B_<i>_<d> (stride a multiple of 16
// bytes), TT_STRIDE1_<i>_<d>, TT_SIZE16_<i>_<d> and TT_SIZE1_<i>_<d>; no
// macro for integers, which are not specialised then.
std::vector<std::string> cuda_specialization_defines(const std::vector<BindingKind>& kinds, bool layout,
                                                     const uint64_t* words, size_t num_words,
                                                     const std::string& kernel_name);

// The C++ type of elements of `packed_dtype` (pack_dtype()) for a template
// argument: "float", "__half", "__nv_bfloat16", ...; empty when there is none.
std::string cuda_element_type(uint32_t packed_dtype);

}  // namespace torch_tile
