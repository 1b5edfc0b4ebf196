// torch_tile._testing: benchmarks and probes of the native runtime, an extension module of its own that the
// shipped package never imports (tests and benchmarks do). It uses _C's types (LaunchPlan...), so _C is
// imported first.
#include <pybind11/pybind11.h>

#include "benchmarks.h"
#include "cpp_defined_ops.h"
#include "key_probe.h"
#include "runtime_probes.h"
#include "tensor_map_probe.h"

PYBIND11_MODULE(_testing, m) {
  pybind11::module_::import("torch_tile._C");
  m.doc() = "Benchmarks and probes of torch_tile's native runtime (tests and benchmarks only)";
  torch_tile::bind_benchmarks(m);
  torch_tile::bind_cpp_defined_ops(m);
  torch_tile::bind_key_probe(m);
  torch_tile::bind_tensor_map_probe(m);
  torch_tile::bind_runtime_probes(m);
}
