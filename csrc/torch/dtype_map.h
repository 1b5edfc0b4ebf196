// at::ScalarType <-> DLDataType, the runtime's dtype vocabulary.
#pragma once

#include <ATen/core/TensorBase.h>
#include <c10/core/ScalarType.h>

#include <vector>

#include "runtime/plan/tensor_arg.h"

namespace torch_tile {

// Returns false for dtypes a launch plan cannot hold (quantized, bits...).
bool to_dl_dtype(c10::ScalarType t, DLDataType* out);
c10::ScalarType to_scalar_type(DLDataType t);
// Every dtype a launch plan's tensors may have (the table's torch side); with `kernel_only`, those a tile kernel
// takes (not complex: bodies pass torch.view_as_real of complex tensors).
std::vector<c10::ScalarType> plan_scalar_types(bool kernel_only);
// The dtype in DLPack terms; throws a Type error for dtypes without one.
DLDataType dl_dtype_of(c10::ScalarType t);
DLDataType dl_dtype_of(const at::TensorBase& t);

}  // namespace torch_tile
