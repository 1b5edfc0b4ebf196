// A framework-neutral view of one tensor argument, in DLPack's types. The
// torch binding fills it from at::Tensor metadata without copying or
// allocating: sizes and strides point into the tensor's own arrays.
#pragma once

#include <cstdint>

#include "third_party/dlpack/dlpack.h"

namespace torch_tile {

// No default member initializers: CallArgs holds ~100 of these on the stack
// per call and fills only the ones it uses (value-initialise with `{}`).
struct TensorArg {
  void* data;  // address of element 0 (storage offset applied)
  const int64_t* sizes;
  const int64_t* strides;  // in elements
  int32_t ndim;
  DLDataType dtype;
};

// DLDataType packed into one word, for cheap comparison and hashing.
inline uint32_t pack_dtype(DLDataType t) {
  return uint32_t(t.code) | (uint32_t(t.bits) << 8) | (uint32_t(t.lanes) << 16);
}
inline DLDataType unpack_dtype(uint32_t packed) {
  return DLDataType{uint8_t(packed & 0xff), uint8_t((packed >> 8) & 0xff),
                    uint16_t(packed >> 16)};
}

}  // namespace torch_tile
