// TMA tensor maps for Triton's host-side tensor descriptors: the arguments of
// cuTensorMapEncodeTiled exactly as Triton's launcher computes them
// (fill_tma_descriptor_tiled), validated with errors that name the op and the
// kernel parameter, and a per-thread cache so a repeated call does not encode.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cuda/cuda_driver_api.h"

namespace torch_tile {

constexpr int kMaxTensorMapRank = 5;

// What the compiler decided for one descriptor parameter (Triton's tensordesc metadata).
struct TensorMapMeta {
  int32_t rank = 0;
  int32_t elem_type = 0;  // CUtensorMapDataType (host enum)
  int32_t elem_size = 0;  // bytes
  int32_t swizzle = 0;    // CUtensorMapSwizzle
  uint32_t box[kMaxTensorMapRank] = {};  // block shape, outermost first
};

// What one call asks for: the descriptor's tensor, shape and strides.
struct TensorMapRequest {
  void* base = nullptr;
  int32_t rank = 0;
  int64_t shape[kMaxTensorMapRank] = {};    // elements, outermost first
  int64_t strides[kMaxTensorMapRank] = {};  // elements, outermost first
  int32_t elem_size = 0;                    // bytes, of the base tensor's dtype
  bool nan_padding = false;
  bool round_tf32 = false;
};

// The arguments of cuTensorMapEncodeTiled (innermost dimension first).
struct TensorMapEncoding {
  int32_t data_type = 0;
  uint32_t rank = 0;
  void* global_address = nullptr;
  uint64_t global_dim[kMaxTensorMapRank] = {};
  uint64_t global_strides[kMaxTensorMapRank] = {};  // bytes; the driver reads rank - 1 of them
  uint32_t box_dim[kMaxTensorMapRank] = {};
  uint32_t element_strides[kMaxTensorMapRank] = {};
  int32_t interleave = 0;
  int32_t swizzle = 0;
  int32_t l2_promotion = 0;
  int32_t oob_fill = 0;

  bool operator==(const TensorMapEncoding& o) const;
  uint64_t hash() const;
};

// Names the descriptor in error messages.
struct TensorMapSite {
  const char* op;
  const std::string& kernel;
  const std::string& param;
  const std::string& launch_site;
};

// Validates the request (address alignment, strides, sizes, box) and computes
// the encoding; throws a Value error naming the site on bad input.
TensorMapEncoding tensor_map_encoding(const TensorMapMeta& meta, const TensorMapRequest& request,
                                      const TensorMapSite& site);

// The encoded map, from this thread's cache or the driver.
const cu::CUtensorMap& cached_tensor_map(const TensorMapEncoding& encoding, const TensorMapSite& site);

// Tests without a GPU: encode with a fake driver that writes the encoding's
// words into the map instead of calling cuTensorMapEncodeTiled.
void use_fake_tensor_map_encoder(bool fake);

}  // namespace torch_tile
