// Probes of runtime pieces that tests cannot reach through an op call on a
// machine without a GPU: the inline cache's bound, and module loading against
// a fake driver (no module leaked when a check after the load fails).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_runtime_probes(pybind11::module_& m);

}  // namespace torch_tile
