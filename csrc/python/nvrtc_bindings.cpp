#include "nvrtc_bindings.h"

#include <pybind11/stl.h>

#include "../runtime/nvrtc.h"
#include "../torch/error_translation.h"

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
          py::gil_scoped_release no_gil;  // seconds of compiling: other threads run
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
}

}  // namespace torch_tile
