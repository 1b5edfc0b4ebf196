#include "runtime/kernels/cuda_source_kernels.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "runtime/error.h"
#include "runtime/kernels/kernel_registry.h"
#include "runtime/nvrtc/nvrtc.h"
#include "runtime/launch/specialization_key.h"
#include "runtime/plan/tensor_arg.h"

namespace torch_tile {
namespace {

// 63 bits of FNV-1a over length-prefixed fields: the same content, the same id in every process.
class StableHash {
 public:
  StableHash& add(const std::string& s) {
    add_int(int64_t(s.size()));
    for (unsigned char c : s) mix(c);
    return *this;
  }
  StableHash& add_int(int64_t v) {
    for (int i = 0; i < 8; ++i) mix(uint8_t(uint64_t(v) >> (8 * i)));
    return *this;
  }
  int64_t id() const { return int64_t(h_ & 0x7fffffffffffffffULL); }

 private:
  void mix(uint8_t byte) { h_ = (h_ ^ byte) * 0x100000001b3ULL; }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<int64_t, CudaSourceKernel> kernels;
  std::unordered_map<int64_t, CudaSourceLaunchConfig> configs;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: kernels may compile during static teardown
  return *r;
}

// Compiles a configuration's instance with NVRTC for a key: the frontend of "cuda_cpp" kernels.
class CudaSourceCompiler final : public Compiler {
 public:
  KernelBinary compile(const KernelCache& kernel, const SpecializationKey& key, int capability) override {
    CudaSourceKernel source;
    CudaSourceLaunchConfig config;
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      auto k = r.kernels.find(kernel.id());
      auto c = key.size > 0 ? r.configs.find(int64_t(key.words[0])) : r.configs.end();
      if (k == r.kernels.end() || c == r.configs.end() || c->second.kernel != kernel.id()) {
        fail(ErrorKind::Runtime, "CUDA kernel " + kernel.name() +
                                     ": this process has no definition of the launch configuration its key names "
                                     "(the op defining it was not defined here)");
      }
      source = k->second;
      config = c->second;
    }
    CudaSource unit;
    unit.code = source.source;
    unit.name_expression = cuda_name_expression(source.name, config.template_args);
    unit.label = "kernel " + unit.name_expression;
    unit.options = source.options;
    for (const std::string& dir : nvrtc_include_dirs()) unit.options.push_back("-I" + dir);
    if (source.specialize != CudaSpecialization::None) {
      const bool layout = source.specialize == CudaSpecialization::CuTile;
      for (const std::string& d : cuda_specialization_defines(config.kinds, layout, key.words, key.size, source.name)) {
        unit.options.push_back("-D" + d);
      }
    }
    CompiledCudaSource compiled = compile_cuda_source(unit, capability);
    KernelBinary b;
    b.name = std::move(compiled.lowered_name);
    b.cubin = std::move(compiled.cubin);
    for (int d = 0; d < 3; ++d) b.block[d] = config.block[size_t(d)];
    b.shared_mem = config.shared_mem;
    for (size_t i = 0; i < config.param_types.size(); ++i) {
      b.runtime_params.push_back(int32_t(i));
      b.runtime_param_types.push_back(config.param_types[i]);
      b.runtime_param_parts.push_back(-1);
    }
    return b;
  }
};

}  // namespace

int64_t register_cuda_source_kernel(const CudaSourceKernel& kernel) {
  if (kernel.name.empty()) fail(ErrorKind::Value, "a CUDA kernel needs the name of its __global__ function");
  StableHash h;
  h.add("cuda_cpp kernel").add(kernel.source).add(kernel.name).add_int(int64_t(kernel.specialize));
  for (const std::string& o : kernel.options) h.add(o);
  const int64_t id = h.id();
  register_frontend_if_absent(kCudaCppFrontend, std::make_shared<CudaSourceCompiler>());
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.kernels.emplace(id, kernel);
  }
  kernel_cache_for(id, kernel.name, kCudaCppFrontend);
  return id;
}

int64_t register_cuda_source_launch_config(const CudaSourceLaunchConfig& config) {
  if (config.kinds.size() != config.param_types.size()) {
    fail(ErrorKind::Runtime, "a CUDA launch configuration needs one parameter type per parameter");
  }
  StableHash h;
  h.add("cuda_cpp config").add_int(config.kernel).add_int(config.block[0]).add_int(config.block[1]).add_int(config.block[2])
      .add_int(config.shared_mem);
  h.add_int(int64_t(config.template_args.size()));
  for (const std::string& a : config.template_args) h.add(a);
  h.add_int(int64_t(config.kinds.size()));
  for (size_t i = 0; i < config.kinds.size(); ++i) h.add_int(int64_t(config.kinds[i])).add_int(int64_t(config.param_types[i]));
  const int64_t id = h.id();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.configs.emplace(id, config);
  return id;
}

std::string cuda_name_expression(const std::string& name, const std::vector<std::string>& template_args) {
  if (template_args.empty()) return name;
  std::string out = name + "<";
  for (size_t i = 0; i < template_args.size(); ++i) out += (i ? ", " : "") + template_args[i];
  return out + ">";
}

std::vector<std::string> cuda_specialization_defines(const std::vector<BindingKind>& kinds, bool layout,
                                                     const uint64_t* words, size_t num_words,
                                                     const std::string& kernel_name) {
  if (num_words != kinds.size() + 1) {
    fail(ErrorKind::Value, "CUDA kernel " + kernel_name + ": a key of " + std::to_string(num_words) + " words for " +
                               std::to_string(kinds.size()) + " parameters");
  }
  std::vector<std::string> defines;
  auto flag = [&](const std::string& name, bool on) { defines.push_back(name + "=" + (on ? "1" : "0")); };
  for (size_t i = 0; i < kinds.size(); ++i) {
    const uint64_t state = words[i + 1] & 3;
    const std::string n = std::to_string(i);
    if (layout) {
      if (kinds[i] != BindingKind::Tensor) continue;
      const uint64_t w = words[i + 1];
      flag("TT_ALIGNED16_" + n, w & array_layout::kBaseAligned16);
      flag("TT_DISJOINT_" + n, w & array_layout::kDisjoint);
      for (int d = 0; d < array_layout::kMaxDims; ++d) {
        const std::string nd = n + "_" + std::to_string(d);
        flag("TT_STRIDE16B_" + nd, w >> (array_layout::kStride16BytesShift + d) & 1);
        flag("TT_STRIDE1_" + nd, w >> (array_layout::kStrideOneShift + d) & 1);
        flag("TT_SIZE16_" + nd, w >> (array_layout::kSizeDiv16Shift + d) & 1);
        flag("TT_SIZE1_" + nd, w >> (array_layout::kSizeOneShift + d) & 1);
      }
    } else if (kinds[i] == BindingKind::Tensor) {
      flag("TT_ALIGNED16_" + n, state == key_word::kAligned16);
    } else if (kinds[i] == BindingKind::Int) {
      flag("TT_EQ1_" + n, state == key_word::kValueOne);
      flag("TT_DIV16_" + n, state == key_word::kValueDiv16);
    }
  }
  return defines;
}

std::string cuda_element_type(uint32_t packed_dtype) {
  const DLDataType t = unpack_dtype(packed_dtype);
  if (t.lanes != 1) return "";
  switch (t.code) {
    case kDLFloat:
      return t.bits == 32 ? "float" : t.bits == 64 ? "double" : t.bits == 16 ? "__half" : "";
    case kDLBfloat:
      return t.bits == 16 ? "__nv_bfloat16" : "";
    case kDLInt:
      return t.bits == 8 ? "signed char" : t.bits == 16 ? "short" : t.bits == 32 ? "int" : t.bits == 64 ? "long long" : "";
    case kDLUInt:
      return t.bits == 8 ? "unsigned char" : "";
    case kDLBool:
      return t.bits == 8 ? "bool" : "";
    default:
      return "";
  }
}

}  // namespace torch_tile
