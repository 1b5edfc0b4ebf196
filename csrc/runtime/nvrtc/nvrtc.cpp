#include "runtime/nvrtc/nvrtc.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <memory>

#include "runtime/error.h"

namespace torch_tile {
namespace {

// nvrtc.h's types and entry points used here (stable C ABI since CUDA 11).
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct Nvrtc {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char*, const char**);
  std::string library;  // what was opened, for messages

  void check(nvrtcResult result, const char* what, const std::string& label) const {
    if (result != NVRTC_SUCCESS) {
      fail(ErrorKind::Runtime, std::string("torch_tile: ") + what + " failed for " + label + ": " +
                                   GetErrorString(result));
    }
  }
};

template <class Fn>
void resolve(void* lib, const std::string& library, const char* name, Fn*& slot) {
  void* sym = dlsym(lib, name);
  if (sym == nullptr) {
    fail(ErrorKind::Runtime, "torch_tile: " + library + " has no symbol " + name + " (NVRTC 11.1 or newer needed)");
  }
  slot = reinterpret_cast<Fn*>(sym);
}

Nvrtc load_nvrtc() {
  // $TORCH_TILE_NVRTC first; then the sonames the torch wheels ship (already loaded by libtorch_cuda in a
  // torch process, so dlopen returns that copy).
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("TORCH_TILE_NVRTC"); path != nullptr && *path != '\0') {
    candidates.emplace_back(path);
  }
  for (const char* soname : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) candidates.emplace_back(soname);
  std::string tried;
  for (const std::string& name : candidates) {
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      tried += "\n  " + name + ": " + (why != nullptr ? why : "not found");
      continue;
    }
    Nvrtc n{};
    n.library = name;
    resolve(lib, name, "nvrtcGetErrorString", n.GetErrorString);
    resolve(lib, name, "nvrtcVersion", n.Version);
    resolve(lib, name, "nvrtcCreateProgram", n.CreateProgram);
    resolve(lib, name, "nvrtcDestroyProgram", n.DestroyProgram);
    resolve(lib, name, "nvrtcAddNameExpression", n.AddNameExpression);
    resolve(lib, name, "nvrtcCompileProgram", n.CompileProgram);
    resolve(lib, name, "nvrtcGetProgramLogSize", n.GetProgramLogSize);
    resolve(lib, name, "nvrtcGetProgramLog", n.GetProgramLog);
    resolve(lib, name, "nvrtcGetCUBINSize", n.GetCUBINSize);
    resolve(lib, name, "nvrtcGetCUBIN", n.GetCUBIN);
    resolve(lib, name, "nvrtcGetLoweredName", n.GetLoweredName);
    return n;
  }
  fail(ErrorKind::Runtime, "torch_tile: cannot load NVRTC, needed to compile CUDA C++ kernels; tried:" + tried +
                               "\n(set TORCH_TILE_NVRTC to the path of libnvrtc.so)");
}

const Nvrtc& nvrtc() {
  static const Nvrtc n = load_nvrtc();  // thread-safe; a failed load throws and is retried next time
  return n;
}

std::string program_log(const Nvrtc& n, nvrtcProgram program) {
  size_t size = 0;
  if (n.GetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (n.GetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // the terminating NUL
  return log;
}

}  // namespace

CompiledCudaSource compile_cuda_source(const CudaSource& source, int capability) {
  const Nvrtc& n = nvrtc();
  const std::string label = source.label.empty() ? "kernel " + source.name_expression : source.label;
  if (source.name_expression.empty()) fail(ErrorKind::Value, "torch_tile: " + label + ": no kernel name given");
  nvrtcProgram program = nullptr;
  n.check(n.CreateProgram(&program, source.code.c_str(), "tile_kernel.cu", 0, nullptr, nullptr),
          "nvrtcCreateProgram", label);
  const auto destroy = [&n](nvrtcProgram* p) { n.DestroyProgram(p); };
  std::unique_ptr<nvrtcProgram, decltype(destroy)> owner(&program, destroy);
  n.check(n.AddNameExpression(program, source.name_expression.c_str()), "nvrtcAddNameExpression", label);

  // sm_XX (not compute_XX): NVRTC emits the cubin itself, no PTX JIT at load time.
  std::vector<std::string> options = {"--gpu-architecture=sm_" + std::to_string(capability)};
  options.insert(options.end(), source.options.begin(), source.options.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled = n.CompileProgram(program, int(argv.size()), argv.data());
  CompiledCudaSource out;
  out.log = program_log(n, program);
  if (compiled != NVRTC_SUCCESS) {
    fail(ErrorKind::Value, "torch_tile: NVRTC could not compile " + label + " for sm_" + std::to_string(capability) +
                               " (" + n.GetErrorString(compiled) + "):\n" + out.log);
  }
  const char* lowered = nullptr;
  n.check(n.GetLoweredName(program, source.name_expression.c_str(), &lowered), "nvrtcGetLoweredName", label);
  out.lowered_name = lowered;
  size_t size = 0;
  n.check(n.GetCUBINSize(program, &size), "nvrtcGetCUBINSize", label);
  if (size == 0) fail(ErrorKind::Runtime, "torch_tile: NVRTC produced no cubin for " + label);
  out.cubin.resize(size);
  n.check(n.GetCUBIN(program, out.cubin.data()), "nvrtcGetCUBIN", label);
  return out;
}

std::vector<std::string> nvrtc_include_dirs() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(nvrtc().Version), &info) == 0 || info.dli_fname == nullptr) return {};
  const std::string lib = info.dli_fname;
  const size_t slash = lib.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string dir = lib.substr(0, slash);
  // A toolkit's or the CUDA 13 wheel's lib/../include; the CUDA 12 wheels keep the runtime's headers
  // (cuda_fp16.h...) beside NVRTC's package, in nvidia/cuda_runtime/include.
  std::vector<std::string> found;
  for (const std::string& include : {dir + "/../include", dir + "/../../cuda_runtime/include"}) {
    struct stat st{};
    if (stat(include.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) found.push_back(include);
  }
  return found;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  const Nvrtc& n = nvrtc();
  n.check(n.Version(&major, &minor), "nvrtcVersion", "NVRTC");
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace torch_tile
