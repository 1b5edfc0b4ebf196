#include "testing_module.h"

#include "benchmarks.h"
#include "cpp_defined_ops.h"
#include "key_probe.h"
#include "runtime_probes.h"
#include "tensor_map_probe.h"

namespace torch_tile {

void bind_testing(pybind11::module_& parent) {
  pybind11::module_ m = parent.def_submodule("testing", "Benchmarks and probes of the native runtime");
  bind_benchmarks(m);
  bind_cpp_defined_ops(m);
  bind_key_probe(m);
  bind_tensor_map_probe(m);
  bind_runtime_probes(m);
}

}  // namespace torch_tile
