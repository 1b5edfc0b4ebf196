// The specialization of one kernel launch, as Triton's JIT computes it: one
// word per kernel parameter plus the launch site's static configuration.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "runtime/plan/limits.h"
#include "runtime/plan/tensor_arg.h"

namespace torch_tile {

// Encoding of a parameter's word (decoded again by the Python frontend).
namespace key_word {
// Pointers: dtype << 2 | alignment state.
constexpr uint64_t kNotSpecialized = 0;
constexpr uint64_t kUnaligned = 1;
constexpr uint64_t kAligned16 = 2;
// Integers: type << 2 | value class.
constexpr uint64_t kInt32 = 0;
constexpr uint64_t kInt64 = 1;
constexpr uint64_t kValueAny = 0;    // do_not_specialize
constexpr uint64_t kValueOne = 1;    // == 1: becomes a constexpr
constexpr uint64_t kValueDiv16 = 2;  // % 16 == 0
constexpr uint64_t kValueOther = 3;
}  // namespace key_word

struct SpecializationKey {
  uint32_t size = 0;
  uint64_t words[kMaxKernelParams + 1];

  void clear() { size = 0; }
  void push(uint64_t w) { words[size++] = w; }
  // Computed only on the way to the kernel's hash map: the inline cache, hit
  // on every steady-state call, compares words directly.
  uint64_t hash() const {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ size;
    for (uint32_t i = 0; i < size; ++i) {
      uint64_t z = h + words[i] + 0x9e3779b97f4a7c15ULL;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      h = z ^ (z >> 31);
    }
    return h;
  }
  bool operator==(const SpecializationKey& o) const {
    return size == o.size && std::memcmp(words, o.words, size * sizeof(uint64_t)) == 0;
  }
};

struct SpecializationKeyHash {
  size_t operator()(const SpecializationKey& k) const { return size_t(k.hash()); }
};

// Triton's rules for an integer argument (native_specialize_impl).
inline uint64_t int_key_word(int64_t v, bool specialize) {
  using namespace key_word;
  const uint64_t type = (v >= INT32_MIN && v <= INT32_MAX) ? kInt32 : kInt64;
  uint64_t cls = kValueAny;
  if (specialize) cls = v == 1 ? kValueOne : (v % 16 == 0 ? kValueDiv16 : kValueOther);
  return type << 2 | cls;
}

inline uint64_t pointer_key_word(uint32_t packed_dtype, const void* p, bool specialize, bool align) {
  using namespace key_word;
  uint64_t state = kNotSpecialized;
  if (specialize) state = (align && (reinterpret_cast<uintptr_t>(p) % 16 == 0)) ? kAligned16 : kUnaligned;
  return uint64_t(packed_dtype) << 2 | state;
}

// A tensor binding with `specialize_layout` carries cuTile's array
// specialization instead (its launcher's per-array bits, computed alike):
// packed dtype << kDtypeShift | the bits below. The array's sizes and strides
// are then bound unspecialised: their divisibility is here, per dimension.
namespace array_layout {
constexpr int kDtypeShift = 32;
constexpr int kMaxDims = 5;  // dimensions with per-dimension bits (TMA's rank limit, as cuTile)
constexpr uint64_t kBaseAligned16 = 1;  // data pointer % 16 == 0
constexpr uint64_t kDisjoint = 2;       // no two elements share memory
constexpr int kStride16BytesShift = 2;  // bit +d: stride(d) in bytes % 16 == 0
constexpr int kStrideOneShift = 7;      // bit +d: stride(d) == 1
constexpr int kSizeDiv16Shift = 12;     // bit +d: size(d) % 16 == 0
constexpr int kSizeOneShift = 17;       // bit +d: size(d) == 1
}  // namespace array_layout

// Whether the elements of `t` occupy distinct addresses, as cuTile decides it:
// ordered by stride, every stride is positive and at least the previous
// stride times the previous size. Where that product leaves int64, or past
// 64 dimensions (torch's limit), the answer is "no": the conservative one, the
// kernel then allows overlap.
inline bool elements_disjoint(const TensorArg& t) {
  constexpr int kMaxDims = 64;
  if (t.ndim == 0) return true;
  if (t.ndim > kMaxDims) return false;
  std::pair<int64_t, int64_t> dims[kMaxDims];  // (stride, size)
  for (int d = 0; d < t.ndim; ++d) dims[d] = {t.strides[d], t.sizes[d]};
  std::sort(dims, dims + t.ndim);
  if (dims[0].first <= 0) return false;
  for (int d = 0; d + 1 < t.ndim; ++d) {
    int64_t extent = 0;
    if (__builtin_mul_overflow(dims[d].first, dims[d].second, &extent) || dims[d + 1].first < extent) return false;
  }
  return true;
}

inline uint64_t layout_key_word(const TensorArg& t) {
  using namespace array_layout;
  const int64_t bits = int64_t(t.dtype.bits) * t.dtype.lanes;
  uint64_t w = uint64_t(pack_dtype(t.dtype)) << kDtypeShift;
  if (t.ndim <= kMaxDims) {
    for (int d = 0; d < t.ndim; ++d) {
      // stride * bits % 128 == 0 (a whole number of 16-byte units), without forming the product.
      if ((t.strides[d] % 128) * bits % 128 == 0) w |= uint64_t(1) << (kStride16BytesShift + d);
      if (t.strides[d] == 1) w |= uint64_t(1) << (kStrideOneShift + d);
      if (t.sizes[d] % 16 == 0) w |= uint64_t(1) << (kSizeDiv16Shift + d);  // 16 elements: whole bytes
      if (t.sizes[d] == 1) w |= uint64_t(1) << (kSizeOneShift + d);
    }
  }
  if (reinterpret_cast<uintptr_t>(t.data) % 16 == 0) w |= kBaseAligned16;
  if (elements_disjoint(t)) w |= kDisjoint;
  return w;
}

}  // namespace torch_tile
