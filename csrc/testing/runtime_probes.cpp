#include "runtime_probes.h"

#include <pybind11/stl.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "runtime/kernels/compiled_kernel.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/error.h"
#include "runtime/launch/inline_cache.h"
#include "runtime/plan/plan_set.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

// Entries an inline cache holds after a call site alternates `rounds` times
// between `variants` keys (each remembered after a miss, as the launch path does).
size_t inline_cache_entries(int variants, int rounds) {
  InlineCache cache;
  for (int round = 0; round < rounds; ++round) {
    for (int v = 0; v < variants; ++v) {
      SpecializationKey key;
      key.push(uint64_t(v));
      if (cache.lookup(key) == nullptr) cache.remember(key, nullptr);
    }
  }
  return cache.entry_count();
}

// Lookups that found a variant other than their key's while `readers` threads looked up two keys of `words`
// words each and one thread remembered them alternately, `rounds` times: a torn read would be one.
int64_t inline_cache_wrong_hits(int readers, int words, int rounds) {
  InlineCache cache;
  SpecializationKey keys[2];
  for (int k = 0; k < 2; ++k) {
    for (int w = 0; w < words; ++w) keys[k].push(uint64_t(k * 1000003 + w));
  }
  CompiledKernel* const variants[2] = {reinterpret_cast<CompiledKernel*>(&keys[0]),
                                       reinterpret_cast<CompiledKernel*>(&keys[1])};
  std::atomic<bool> done{false};
  std::atomic<int64_t> wrong{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < readers; ++r) {
    threads.emplace_back([&] {
      while (!done.load(std::memory_order_relaxed)) {
        for (int k = 0; k < 2; ++k) {
          CompiledKernel* found = cache.lookup(keys[k]);
          if (found != nullptr && found != variants[k]) wrong.fetch_add(1);
        }
      }
    });
  }
  for (int round = 0; round < rounds; ++round) cache.remember(keys[round % 2], variants[round % 2]);
  done.store(true);
  for (std::thread& t : threads) t.join();
  return wrong.load();
}

// A driver whose module loads succeed and whose function-attribute query (the
// first call after the load for a kernel with > 48 KB of shared memory) fails.
std::atomic<int> g_loaded_modules{0};
std::atomic<int> g_unloaded_modules{0};
int g_fake_module = 0;

cu::CUresult fake_ok_attribute(int* v, int which, cu::CUdevice) {
  *v = which == cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ? 232448 : 90;
  return cu::CUDA_SUCCESS;
}

CudaDriver fake_driver() {
  CudaDriver d{};
  d.cuDeviceGet = [](cu::CUdevice* dev, int ordinal) { *dev = ordinal; return cu::CUDA_SUCCESS; };
  d.cuDeviceGetAttribute = fake_ok_attribute;
  d.cuModuleLoadData = [](cu::CUmodule* m, const void*) {
    g_loaded_modules.fetch_add(1);
    *m = reinterpret_cast<cu::CUmodule>(&g_fake_module);
    return cu::CUDA_SUCCESS;
  };
  d.cuModuleUnload = [](cu::CUmodule) {
    g_unloaded_modules.fetch_add(1);
    return cu::CUDA_SUCCESS;
  };
  d.cuModuleGetFunction = [](cu::CUfunction* f, cu::CUmodule, const char*) {
    *f = reinterpret_cast<cu::CUfunction>(&g_fake_module);
    return cu::CUDA_SUCCESS;
  };
  d.cuFuncGetAttribute = [](int*, int, cu::CUfunction) { return cu::CUresult(1); };  // CUDA_ERROR_INVALID_VALUE
  return d;
}

// Loads a kernel whose post-load set-up fails; returns (modules loaded,
// modules unloaded, error message). The fake serves device `device` only for
// this call (use an ordinal no real test uses: device properties are cached).
py::tuple failed_load_modules(int device) {
  static const CudaDriver fake = fake_driver();
  g_loaded_modules = 0;
  g_unloaded_modules = 0;
  std::string message;
  override_cuda_driver(&fake);
  try {
    KernelBinary binary;
    binary.name = "probe";
    binary.cubin = "not a cubin";
    binary.shared_mem = 64 * 1024;  // load queries the function's static shared memory, which fails here
    CompiledKernel kernel(std::move(binary), 90);
    try {
      kernel.function(device);
    } catch (const Error& e) {
      message = e.what();
    }
  } catch (...) {
    override_cuda_driver(nullptr);
    throw;
  }
  override_cuda_driver(nullptr);
  return py::make_tuple(g_loaded_modules.load(), g_unloaded_modules.load(), message);
}

std::vector<size_t> g_kernel_param_sizes;  // what the fake driver's cuFuncGetParamInfo reports

// Loads a kernel whose launch metadata declares parameters of `declared` bytes (1, 2, 4 or 8) against a fake
// driver whose function has parameters of `kernel_sizes` bytes: the load-time check's message ("" if it passes).
std::string param_check_message(const std::vector<size_t>& kernel_sizes, const std::vector<int>& declared, int device) {
  static CudaDriver fake = [] {
    CudaDriver d = fake_driver();
    d.cuFuncGetAttribute = [](int* value, int attribute, cu::CUfunction) {  // no static shared memory
      if (attribute != cu::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) return cu::CUresult(1);  // the others unknown
      *value = 0;
      return cu::CUDA_SUCCESS;
    };
    d.cuFuncGetParamInfo = [](cu::CUfunction, size_t i, size_t* offset, size_t* size) {
      if (i >= g_kernel_param_sizes.size()) return cu::CUresult(1);  // CUDA_ERROR_INVALID_VALUE: no such parameter
      *offset = 0;
      *size = g_kernel_param_sizes[i];
      return cu::CUDA_SUCCESS;
    };
    return d;
  }();
  g_kernel_param_sizes = kernel_sizes;
  KernelBinary binary;
  binary.name = "probe";
  binary.cubin = "not a cubin";
  for (size_t i = 0; i < declared.size(); ++i) {
    const int w = declared[i];
    binary.runtime_params.push_back(int32_t(i));
    binary.runtime_param_types.push_back(w == 1 ? ParamType::U8 : w == 2 ? ParamType::I16 : w == 4 ? ParamType::I32 : ParamType::I64);
    binary.runtime_param_parts.push_back(-1);
  }
  std::string message;
  override_cuda_driver(&fake);
  try {
    CompiledKernel kernel(std::move(binary), 90);
    kernel.function(device);
  } catch (const Error& e) {
    message = e.what();
  }
  override_cuda_driver(nullptr);
  return message;
}

}  // namespace

void bind_runtime_probes(py::module_& m) {
  m.def("param_check_message", &param_check_message, py::arg("kernel_sizes"), py::arg("declared"), py::arg("device"),
        "Against a fake driver with parameters of `kernel_sizes` bytes, loads a kernel declaring `declared` byte "
        "widths: the load-time check's error, or ''.");
  m.def("inline_cache_entries", &inline_cache_entries, py::arg("variants"), py::arg("rounds"),
        "Entries an InlineCache holds after a call site alternates `rounds` times between `variants` keys.");
  m.def("inline_cache_wrong_hits", &inline_cache_wrong_hits, py::arg("readers"), py::arg("words"), py::arg("rounds"),
        py::call_guard<py::gil_scoped_release>(),
        "Lookups of an InlineCache that returned another key's variant while one thread remembered two keys "
        "alternately and `readers` threads looked them up.");
  m.def("failed_load_modules", &failed_load_modules, py::arg("device"),
        "Against a fake driver, loads a kernel whose set-up after cuModuleLoadData fails: "
        "(modules loaded, modules unloaded, error).");
  m.def("plans_disjoint", &plans_disjoint, py::arg("a"), py::arg("b"),
        "Whether no call can satisfy both plans, as their guards alone show (the rule PlanSet uses).");
}

}  // namespace torch_tile
