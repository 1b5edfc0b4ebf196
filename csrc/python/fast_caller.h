// A faster Python entry for tile ops. torch.ops' generic `_op` resolves
// overloads and converts arguments through the JIT schema machinery (several
// µs per call). For a tile op the schema is fixed, so this entry converts the
// positional arguments directly and calls the op through c10::Dispatcher, so
// autograd, functionalization and fake-tensor modes still apply. Anything
// unusual (keywords, defaults, __torch_function__ overrides or modes, other
// types) goes to torch's original entry, unchanged.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_tile {

void bind_fast_caller(pybind11::module_& m);

}  // namespace torch_tile
