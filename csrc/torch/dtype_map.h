// at::ScalarType <-> DLDataType, the runtime's dtype vocabulary.
#pragma once

#include <ATen/core/TensorBase.h>
#include <c10/core/ScalarType.h>

#include <vector>

#include "runtime/plan/tensor_arg.h"

namespace torch_tile {

// Returns false for dtypes a tile kernel cannot take (complex, quantized...).
bool to_dl_dtype(c10::ScalarType t, DLDataType* out);
c10::ScalarType to_scalar_type(DLDataType t);
// Every dtype a tile kernel can take (the table's torch side).
std::vector<c10::ScalarType> kernel_scalar_types();
// The dtype in DLPack terms; throws a Type error for dtypes without one.
DLDataType dl_dtype_of(c10::ScalarType t);
DLDataType dl_dtype_of(const at::TensorBase& t);

}  // namespace torch_tile
