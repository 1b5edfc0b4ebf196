#include "nvrtc_bindings.h"

#include <pybind11/stl.h>

#include "runtime/kernels/cuda_source_kernels.h"
#include "runtime/nvrtc/nvrtc.h"
#include "../torch/error_translation.h"
#include "interpreter_exit.h"

namespace py = pybind11;

namespace torch_tile {

void bind_nvrtc(py::module_& m) {
  m.def(
      "compile_cuda_source",
      [](const std::string& code, const std::string& name_expression, const std::vector<std::string>& options,
         int capability, const std::string& label) {
        CudaSource source{code, name_expression, options, label};
        CompiledCudaSource compiled;
        {
          GilRelease no_gil;  // seconds of compiling: other threads run
          compiled = translating_errors([&] { return compile_cuda_source(source, capability); });
        }
        py::dict out;
        out["cubin"] = py::bytes(compiled.cubin);
        out["lowered_name"] = compiled.lowered_name;
        out["log"] = compiled.log;
        return out;
      },
      py::arg("code"), py::arg("name_expression"), py::arg("options"), py::arg("capability"), py::arg("label") = "",
      "Compiles one kernel of a CUDA C++ source for sm_<capability> with NVRTC: {cubin, lowered_name, log}.");
  m.def("nvrtc_version", [] { return translating_errors([] { return nvrtc_version(); }); },
        "NVRTC's version, 'major.minor' (loads NVRTC).");
  m.def("nvrtc_include_dirs", [] { return translating_errors([] { return nvrtc_include_dirs(); }); },
        "The CUDA headers beside the NVRTC in use (cuda_fp16.h...), for -I (loads NVRTC).");
  m.def(
      "cuda_specialization_defines",
      [](const std::vector<int>& kinds, const std::vector<uint64_t>& words, const std::string& kernel_name,
         bool layout) {
        std::vector<BindingKind> k(kinds.size());
        for (int kind : kinds) {
          if (kind < 0 || kind > int(BindingKind::TensorDesc)) throw py::value_error("unknown binding kind");
        }
        for (size_t i = 0; i < kinds.size(); ++i) k[i] = BindingKind(kinds[i]);
        return translating_errors(
            [&] { return cuda_specialization_defines(k, layout, words.data(), words.size(), kernel_name); });
      },
      py::arg("kinds"), py::arg("words"), py::arg("kernel_name"), py::arg("layout") = false,
      "The NAME=0/1 macros a specialised CUDA kernel's variant sees, from its binding kinds and key words "
      "(Triton's bits, or with `layout` cuTile's array bits per tensor).");
  m.def("cuda_name_expression", &cuda_name_expression, py::arg("name"), py::arg("template_args"),
        "'name<args...>' as C++ spells a kernel instance (the runtime's, for ops defined in C++ too).");
  m.def(
      "block_problem",
      [](const std::array<int64_t, 3>& block) { return block_problem(block[0], block[1], block[2]); },
      py::arg("block"), "Why CUDA cannot launch a block of these (x, y, z) threads, or '' when it can.");
  m.def("cuda_element_type", &cuda_element_type, py::arg("packed_dtype"),
        "The C++ type name of a packed dtype's elements ('float', '__half'...), '' if none.");
}

}  // namespace torch_tile
