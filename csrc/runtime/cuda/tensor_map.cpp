#include "runtime/cuda/tensor_map.h"

#include <atomic>
#include <cstring>
#include <cstdio>

#include "runtime/counters.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/error.h"

namespace torch_tile {
namespace {

// Limits of cuTensorMapEncodeTiled (CUDA driver API documentation).
constexpr uint64_t kMaxGlobalDim = uint64_t(1) << 32;
constexpr uint64_t kMaxGlobalStrideBytes = uint64_t(1) << 40;
constexpr uint32_t kMaxBoxDim = 256;
constexpr uint64_t kAlignment = 16;
constexpr int32_t kDataTypeTf32 = 11;  // CU_TENSOR_MAP_DATA_TYPE_TFLOAT32

[[noreturn]] void bad_descriptor(const TensorMapSite& site, const std::string& what) {
  fail(ErrorKind::Value, std::string(site.op) + ": tensor descriptor '" + site.param + "' of kernel " + site.kernel +
                             " (launched at " + site.launch_site + "): " + what);
}

// No iostreams here: a torch build may carry a libstdc++ whose locale facets
// differ from the compiler's, and ostream number formatting then crashes.
template <class T>
std::string list(const T* values, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

cu::CUresult driver_encode(cu::CUtensorMap* map, const TensorMapEncoding& e) {
  const CudaDriver& d = cuda_driver();
  return d.cuTensorMapEncodeTiled(map, e.data_type, e.rank, e.global_address, e.global_dim, e.global_strides,
                                  e.box_dim, e.element_strides, e.interleave, e.swizzle, e.l2_promotion,
                                  e.oob_fill);
}

// The fake driver: the map holds the encoding's hash and address, so tests can
// tell maps apart without a GPU.
cu::CUresult fake_encode(cu::CUtensorMap* map, const TensorMapEncoding& e) {
  std::memset(map, 0, sizeof(*map));
  map->opaque[0] = e.hash();
  map->opaque[1] = reinterpret_cast<uintptr_t>(e.global_address);
  return cu::CUDA_SUCCESS;
}

std::atomic<cu::CUresult (*)(cu::CUtensorMap*, const TensorMapEncoding&)> g_encoder{driver_encode};

// A direct-mapped cache per thread: no lock on the launch path, and a map is
// a pure function of its encoding, so entries never go stale (a reused
// address with the same shape, strides and box encodes identically).
struct CacheEntry {
  TensorMapEncoding encoding;
  cu::CUtensorMap map;
  bool valid;
};
constexpr size_t kCacheEntries = 64;
thread_local CacheEntry t_cache[kCacheEntries];

}  // namespace

bool TensorMapEncoding::operator==(const TensorMapEncoding& o) const {
  return data_type == o.data_type && rank == o.rank && global_address == o.global_address &&
         std::memcmp(global_dim, o.global_dim, sizeof(global_dim)) == 0 &&
         std::memcmp(global_strides, o.global_strides, sizeof(global_strides)) == 0 &&
         std::memcmp(box_dim, o.box_dim, sizeof(box_dim)) == 0 &&
         std::memcmp(element_strides, o.element_strides, sizeof(element_strides)) == 0 &&
         interleave == o.interleave && swizzle == o.swizzle && l2_promotion == o.l2_promotion &&
         oob_fill == o.oob_fill;
}

uint64_t TensorMapEncoding::hash() const {
  // splitmix64's finalizer per field: every input bit reaches the low bits that
  // pick the cache line (addresses differ only above bit 8).
  uint64_t h = 0;
  auto mix = [&h](uint64_t v) {
    uint64_t z = h + v + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    h = z ^ (z >> 31);
  };
  mix(reinterpret_cast<uintptr_t>(global_address));
  for (uint32_t i = 0; i < rank; ++i) {
    mix(global_dim[i]);
    mix(global_strides[i]);
    mix(box_dim[i]);
  }
  mix(uint64_t(uint32_t(data_type)) << 32 | uint32_t(swizzle));
  mix(uint64_t(uint32_t(oob_fill)));
  return h;
}

TensorMapEncoding tensor_map_encoding(const TensorMapMeta& meta, const TensorMapRequest& r,
                                      const TensorMapSite& site) {
  const int rank = r.rank;
  if (rank != meta.rank) {
    bad_descriptor(site, "has rank " + std::to_string(rank) + " but the kernel was compiled for rank " +
                             std::to_string(meta.rank));
  }
  if (r.elem_size != meta.elem_size) {
    bad_descriptor(site, "elements of " + std::to_string(r.elem_size) + " bytes, compiled for " +
                             std::to_string(meta.elem_size));
  }
  const uint64_t address = reinterpret_cast<uintptr_t>(r.base);
  if (address % kAlignment != 0) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(address));
    bad_descriptor(site, std::string("base address ") + hex +
                             " is not 16-byte aligned, which TMA requires (the tensor starts at an offset inside its "
                             "storage: pass a contiguous copy, e.g. x.clone())");
  }
  if (r.strides[rank - 1] != 1) {
    bad_descriptor(site, "the last dimension must be contiguous (stride 1), got strides " +
                             list(r.strides, rank) + " (use .contiguous())");
  }
  TensorMapEncoding e;
  e.data_type = r.round_tf32 ? kDataTypeTf32 : meta.elem_type;
  e.rank = uint32_t(rank);
  e.global_address = r.base;
  for (int i = 0; i < rank; ++i) {
    const int inner = rank - 1 - i;  // the driver takes the innermost dimension first
    if (r.shape[i] <= 0 || uint64_t(r.shape[i]) > kMaxGlobalDim) {
      bad_descriptor(site, "shape " + list(r.shape, rank) + ": every size must be in [1, 2^32]");
    }
    e.global_dim[inner] = uint64_t(r.shape[i]);
    e.box_dim[inner] = meta.box[i];
    e.element_strides[inner] = 1;
    if (meta.box[i] == 0 || meta.box[i] > kMaxBoxDim) {
      bad_descriptor(site, "block shape " + list(meta.box, rank) + ": each entry must be in [1, 256]");
    }
  }
  for (int i = 0; i + 1 < rank; ++i) {
    const int64_t bytes = r.strides[i] * r.elem_size;
    if (r.strides[i] <= 0 || bytes % int64_t(kAlignment) != 0 || uint64_t(bytes) >= kMaxGlobalStrideBytes) {
      bad_descriptor(site, "strides " + list(r.strides, rank) + " (elements of " + std::to_string(r.elem_size) +
                               " bytes): every stride but the last must be positive, a multiple of 16 bytes and "
                               "below 2^40 bytes (pad the rows, or pass a contiguous copy)");
    }
    e.global_strides[rank - 2 - i] = uint64_t(bytes);
  }
  // Unused by the driver (it reads rank - 1 strides); as Triton fills it.
  e.global_strides[rank - 1] = e.global_dim[rank - 1] * (rank == 1 ? uint64_t(r.elem_size) : e.global_strides[rank - 2]);
  if ((uint64_t(e.box_dim[0]) * uint64_t(r.elem_size)) % kAlignment != 0) {
    bad_descriptor(site, "block shape " + list(meta.box, rank) + ": the innermost block dimension spans " +
                             std::to_string(e.box_dim[0] * uint32_t(r.elem_size)) +
                             " bytes; TMA needs a multiple of 16");
  }
  e.interleave = cu::CU_TENSOR_MAP_INTERLEAVE_NONE;
  e.swizzle = meta.swizzle;
  e.l2_promotion = cu::CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  e.oob_fill = r.nan_padding ? cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                             : cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return e;
}

const cu::CUtensorMap& cached_tensor_map(const TensorMapEncoding& e, const TensorMapSite& site) {
  CacheEntry& entry = t_cache[e.hash() % kCacheEntries];
  if (entry.valid && entry.encoding == e) return entry.map;
  entry.valid = false;
  const cu::CUresult r = g_encoder.load(std::memory_order_relaxed)(&entry.map, e);
  if (r != cu::CUDA_SUCCESS) {
    const int rank = int(e.rank);
    bad_descriptor(site, "cuTensorMapEncodeTiled failed: " + cuda_driver().describe(r) + " (global dims " +
                             list(e.global_dim, rank) + ", strides in bytes " + list(e.global_strides, rank - 1) +
                             ", box " + list(e.box_dim, rank) + ", swizzle " + std::to_string(e.swizzle) +
                             ", data type " + std::to_string(e.data_type) + ")");
  }
  counters().tensor_map_encodes.fetch_add(1, std::memory_order_relaxed);
  entry.encoding = e;
  entry.valid = true;
  return entry.map;
}

void use_fake_tensor_map_encoder(bool fake) { g_encoder.store(fake ? fake_encode : driver_encode); }

}  // namespace torch_tile
