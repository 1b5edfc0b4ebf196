#include "runtime/kernels/bundle.h"

#include "runtime/plan/byte_io.h"

namespace torch_tile {
namespace {

constexpr const char* kWhat = "bundle";

void write_binary(ByteWriter& w, const KernelBinary& b) {
  w.str(b.name);
  w.str(b.cubin);
  for (int32_t threads : b.block) w.pod(threads);
  w.pod(b.num_ctas);
  w.pod(b.shared_mem);
  w.flag(b.launch_pdl);
  w.flag(b.launch_cooperative_grid);
  w.pod(b.global_scratch_size);
  w.pod(b.global_scratch_align);
  w.pod(b.profile_scratch_size);
  w.pod(b.profile_scratch_align);
  w.count(b.runtime_params.size());
  for (size_t i = 0; i < b.runtime_params.size(); ++i) {
    w.pod(b.runtime_params[i]);
    w.pod(int32_t(b.runtime_param_types[i]));
    w.pod(b.runtime_param_parts[i]);
  }
  w.count(b.tensor_maps.size());
  for (const TensorMapMeta& m : b.tensor_maps) {
    w.pod(m.rank);
    w.pod(m.elem_type);
    w.pod(m.elem_size);
    w.pod(m.swizzle);
    for (int d = 0; d < kMaxTensorMapRank; ++d) w.pod(m.box[d]);
  }
}

KernelBinary read_binary(ByteReader& r) {
  KernelBinary b;
  b.name = r.str();
  b.cubin = r.str();
  for (int32_t& threads : b.block) threads = r.pod<int32_t>();
  b.num_ctas = r.pod<int32_t>();
  b.shared_mem = r.pod<int32_t>();
  b.launch_pdl = r.flag();
  b.launch_cooperative_grid = r.flag();
  b.global_scratch_size = r.pod<int64_t>();
  b.global_scratch_align = r.pod<int64_t>();
  b.profile_scratch_size = r.pod<int64_t>();
  b.profile_scratch_align = r.pod<int64_t>();
  const size_t n = r.count(9);
  for (size_t i = 0; i < n; ++i) {
    b.runtime_params.push_back(r.pod<int32_t>());
    const int32_t type = r.pod<int32_t>();
    if (type < int32_t(ParamType::Pointer) || type > int32_t(ParamType::TensorMap)) {
      r.corrupt("a kernel parameter of unknown type " + std::to_string(type));
    }
    b.runtime_param_types.push_back(ParamType(type));
    b.runtime_param_parts.push_back(r.pod<int8_t>());
  }
  b.tensor_maps.resize(r.count(16 + 4 * kMaxTensorMapRank));
  for (TensorMapMeta& m : b.tensor_maps) {
    m.rank = r.pod<int32_t>();
    m.elem_type = r.pod<int32_t>();
    m.elem_size = r.pod<int32_t>();
    m.swizzle = r.pod<int32_t>();
    for (int d = 0; d < kMaxTensorMapRank; ++d) m.box[d] = r.pod<uint32_t>();
  }
  return b;
}

}  // namespace

std::string serialize_bundle(const Bundle& bundle) {
  ByteWriter w;
  w.str(bundle.producer);
  w.count(bundle.ops.size());
  for (const std::string& op : bundle.ops) w.str(op);
  w.count(bundle.variants.size());
  for (const BundledVariant& v : bundle.variants) {
    w.pod(v.kernel.id);
    w.str(v.kernel.name);
    w.str(v.kernel.frontend);
    w.pod(v.capability);
    w.count(v.key.size());
    for (uint64_t word : v.key) w.pod(word);
    write_binary(w, v.binary);
  }
  return frame(kBundleMagic, kBundleFormatVersion, w.out);
}

Bundle deserialize_bundle(const std::string& bytes) {
  ByteReader r(bytes, unframe(bytes, kBundleMagic, kBundleFormatVersion, kWhat), kWhat);
  Bundle bundle;
  bundle.producer = r.str();
  bundle.ops.resize(r.count(4));
  for (std::string& op : bundle.ops) op = r.str();
  bundle.variants.resize(r.count(32));
  for (BundledVariant& v : bundle.variants) {
    v.kernel.id = r.pod<int64_t>();
    v.kernel.name = r.str();
    v.kernel.frontend = r.str();
    v.capability = r.pod<int32_t>();
    v.key.resize(r.count(8));
    if (v.key.empty() || v.key.size() > size_t(kMaxKernelParams + 1)) r.corrupt("a variant key of bad length");
    for (uint64_t& word : v.key) word = r.pod<uint64_t>();
    v.binary = read_binary(r);
    try {
      check_kernel_binary(v.binary);
    } catch (const Error& e) {
      r.corrupt("variant of kernel " + v.kernel.name + ": " + e.what());
    }
  }
  if (!r.at_end()) r.corrupt("trailing data");
  return bundle;
}

}  // namespace torch_tile
