#include "runtime/launch/plan_executor.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/counters.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/device_info.h"
#include "runtime/error.h"
#include "runtime/plan/evaluation_site.h"
#include "runtime/plan/limits.h"
#include "runtime/cuda/tensor_map.h"

namespace torch_tile {

void PreparedLaunch::bind() {
  for (size_t j = 0; j < num_params; ++j) {
    params[j] = map_of_param[j] >= 0 ? static_cast<void*>(&tensor_maps[map_of_param[j]]) : &storage[j];
  }
  config.attrs = attrs;
}

namespace {

// One kernel parameter's value for this call, before packing.
union ParamValue {
  int64_t i;
  double f;
  void* p;
};

// "kernel k (launched at body.py:12)": where a launch's errors come from.
std::string launch_site(const LaunchStep& step) {
  return "kernel " + step.kernel->name() + " (launched at " + step.site + ")";
}

// Runs `fn`, a part of preparing `step`'s launch; a runtime error it throws names op, kernel and launch site.
template <class Fn>
decltype(auto) at_launch(const char* op, const LaunchStep& step, Fn fn) {
  try {
    return fn();
  } catch (const Error& e) {
    fail(e.kind(), std::string(op) + ": " + launch_site(step) + ": " + e.what());
  }
}

void evaluate_bindings(const LaunchStep& step, const CallArgs& args, const char* op, ParamValue* values) {
  const EvalContext ctx = args.eval();
  for (size_t i = 0; i < step.bindings.size(); ++i) {
    const Binding& b = step.bindings[i];
    switch (b.kind) {
      case BindingKind::Tensor:
      case BindingKind::TensorDesc: values[i].p = args.slots[b.slot].data; break;
      case BindingKind::Int:
      case BindingKind::Bool:
      case BindingKind::Constexpr:
        values[i].i = evaluate_at(b.expr, ctx, op, [&] { return "argument " + std::to_string(i) + " of " + launch_site(step); });
        break;
      case BindingKind::Float: values[i].f = b.slot >= 0 ? args.floats[b.slot] : b.float_value; break;
      case BindingKind::Static: values[i].i = 0; break;
    }
  }
}

void key_from_values(const LaunchStep& step, const CallArgs& args, const ParamValue* values,
                     SpecializationKey& key) {
  key.clear();
  key.push(uint64_t(step.config_id));
  for (size_t i = 0; i < step.bindings.size(); ++i) {
    const Binding& b = step.bindings[i];
    switch (b.kind) {
      case BindingKind::Tensor:
        key.push(b.specialize_layout ? layout_key_word(args.slots[b.slot])
                                     : pointer_key_word(pack_dtype(args.slots[b.slot].dtype), values[i].p,
                                                        b.specialize, b.specialize_alignment));
        break;
      case BindingKind::TensorDesc:  // Triton specialises a descriptor on its dtype and block shape (static)
        key.push(uint64_t(pack_dtype(args.slots[b.slot].dtype)) << 2);
        break;
      case BindingKind::Int: key.push(int_key_word(values[i].i, b.specialize)); break;
      case BindingKind::Constexpr: key.push(uint64_t(values[i].i)); break;
      default: key.push(0); break;
    }
  }
}

[[noreturn]] void param_overflow(const char* op, const LaunchStep& step, size_t param, int64_t v,
                                 const char* type) {
  fail(ErrorKind::Value, std::string(op) + ": argument " + std::to_string(param) + " of " + launch_site(step) + " is " +
                             std::to_string(v) + ", which does not fit the parameter's type " + type);
}

// Packs one runtime parameter into `slot` at the width the compiled kernel takes.
void pack_param(const char* op, const LaunchStep& step, size_t index, ParamType type,
                const ParamValue& v, uint64_t* slot) {
  const int64_t i = v.i;
  auto in_range = [&](int64_t lo, int64_t hi, const char* name) {
    if (i < lo || i > hi) param_overflow(op, step, index, i, name);
  };
  *slot = 0;
  switch (type) {
    case ParamType::Pointer: std::memcpy(slot, &v.p, sizeof(void*)); break;
    case ParamType::I8: in_range(INT8_MIN, INT8_MAX, "i8"); *reinterpret_cast<int8_t*>(slot) = int8_t(i); break;
    case ParamType::U8: in_range(0, UINT8_MAX, "u8"); *reinterpret_cast<uint8_t*>(slot) = uint8_t(i); break;
    case ParamType::I16: in_range(INT16_MIN, INT16_MAX, "i16"); *reinterpret_cast<int16_t*>(slot) = int16_t(i); break;
    case ParamType::U16: in_range(0, UINT16_MAX, "u16"); *reinterpret_cast<uint16_t*>(slot) = uint16_t(i); break;
    case ParamType::I32: in_range(INT32_MIN, INT32_MAX, "i32"); *reinterpret_cast<int32_t*>(slot) = int32_t(i); break;
    case ParamType::U32: in_range(0, UINT32_MAX, "u32"); *reinterpret_cast<uint32_t*>(slot) = uint32_t(i); break;
    case ParamType::I64: *reinterpret_cast<int64_t*>(slot) = i; break;
    case ParamType::U64: in_range(0, INT64_MAX, "u64"); *reinterpret_cast<uint64_t*>(slot) = uint64_t(i); break;
    case ParamType::F32: *reinterpret_cast<float*>(slot) = float(v.f); break;
    case ParamType::F64: *reinterpret_cast<double*>(slot) = v.f; break;
    case ParamType::TensorMap: fail(ErrorKind::Runtime, "a tensor map is not a scalar parameter");
  }
}

// The CUtensorMap of a descriptor binding for this call (cached per thread);
// `r` receives the evaluated shape and strides, which the kernel takes next.
void build_tensor_map(const char* op, const LaunchStep& step, const Binding& b, const TensorMapMeta& meta,
                      const CallArgs& args, TensorMapRequest& r, cu::CUtensorMap& out) {
  const EvalContext ctx = args.eval();
  const TensorArg& base = args.slots[b.slot];
  r.base = base.data;
  r.rank = int32_t(b.desc.shape.size());
  const auto where = [&] { return "tensor descriptor '" + b.desc.name + "' of " + launch_site(step); };
  for (int k = 0; k < r.rank; ++k) {
    r.shape[k] = evaluate_at(b.desc.shape[size_t(k)], ctx, op, where);
    r.strides[k] = evaluate_at(b.desc.strides[size_t(k)], ctx, op, where);
  }
  r.elem_size = int32_t(base.dtype.bits / 8);
  r.nan_padding = b.desc.nan_padding;
  r.round_tf32 = b.desc.round_tf32;
  const TensorMapSite site{op, step.kernel->name(), b.desc.name, step.site};
  out = cached_tensor_map(tensor_map_encoding(meta, r, site), site);
}

CompiledKernel* find_variant(const char* op, const LaunchStep& step, const SpecializationKey& key, int device) {
  if (CompiledKernel* k = step.inline_cache->lookup(key)) return k;
  counters().map_lookups.fetch_add(1, std::memory_order_relaxed);
  CompiledKernel* k = at_launch(op, step, [&] { return step.kernel->get_or_compile(key, device_info(device).capability); });
  step.inline_cache->remember(key, k);
  return k;
}

[[noreturn]] void grid_error(const char* op, const LaunchStep& step, int d, int64_t value,
                             const std::string& why) {
  fail(ErrorKind::Value, std::string(op) + ": grid dimension " + std::to_string(d) + " of " + launch_site(step) +
                             " is " + std::to_string(value) + why);
}

// The step's grid, refused when a dimension is negative or past CUDA's limits
// (every path, dry runs included, so a plan never hands a device such a grid);
// false when a dimension is 0: such a launch does nothing, exactly as Triton's launcher.
bool evaluate_grid(const LaunchStep& step, const CallArgs& args, const char* op, int64_t (&grid)[3]) {
  const EvalContext ctx = args.eval();
  for (int d = 0; d < 3; ++d) {
    grid[d] = evaluate_at(step.grid[d], ctx, op, [&] { return "grid dimension " + std::to_string(d) + " of " + launch_site(step); });
    if (grid[d] < 0 || grid[d] > kMaxGrid[d]) {
      grid_error(op, step, d, grid[d],
                 " (`" + step.grid[d].text + "`); expected 0 to " + std::to_string(kMaxGrid[d]) +
                     " (0 launches nothing)");
    }
  }
  return grid[0] != 0 && grid[1] != 0 && grid[2] != 0;
}

bool grid_is_empty(const LaunchStep& step, const CallArgs& args, const char* op) {
  int64_t grid[3];
  return !evaluate_grid(step, args, op, grid);
}

// Evaluates grid and bindings, finds or compiles the variant, packs the
// parameters. Returns false for an empty grid (nothing to launch).
bool prepare_launch(const LaunchStep& step, CallArgs& args, LaunchHost& host, const char* op,
                    PreparedLaunch& out) {
  int64_t grid[3];
  if (!evaluate_grid(step, args, op, grid)) return false;

  ParamValue values[kMaxKernelParams];
  evaluate_bindings(step, args, op, values);
  SpecializationKey key;
  key_from_values(step, args, values, key);
  CompiledKernel* kernel = find_variant(op, step, key, args.device);
  const KernelBinary& bin = kernel->binary();

  const DeviceInfo& info = device_info(args.device);
  const int64_t launch_grid[3] = {grid[0] * bin.num_ctas, grid[1], grid[2]};
  for (int d = 0; d < 3; ++d) {
    if (launch_grid[d] > info.max_grid[d]) {
      grid_error(op, step, d, launch_grid[d], ", above the device's limit " + std::to_string(info.max_grid[d]));
    }
  }

  const size_t n = bin.runtime_params.size();
  int num_maps = 0;
  TensorMapRequest descriptor;  // the last descriptor's values: its shape and strides follow its map
  for (size_t j = 0; j < n; ++j) {
    const int32_t p = bin.runtime_params[j];
    const ParamType type = bin.runtime_param_types[j];
    const int part = bin.runtime_param_parts[j];
    out.map_of_param[j] = -1;
    if (type == ParamType::TensorMap) {
      build_tensor_map(op, step, step.bindings[size_t(p)], bin.tensor_maps[size_t(num_maps)], args, descriptor,
                       out.tensor_maps[num_maps]);
      out.map_of_param[j] = int8_t(num_maps++);
    } else if (part >= 0) {
      ParamValue v;
      v.i = part < descriptor.rank ? descriptor.shape[part] : descriptor.strides[part - descriptor.rank];
      pack_param(op, step, size_t(p), type, v, &out.storage[j]);
    } else {
      pack_param(op, step, size_t(p), type, values[p], &out.storage[j]);
    }
  }
  // Triton's trailing scratch pointers: one buffer sized per program, or null.
  const int64_t programs = grid[0] * grid[1] * grid[2] * bin.num_ctas;
  void* global_scratch = bin.global_scratch_size > 0 ? at_launch(op, step, [&] {
    return host.scratch(size_t(programs * bin.global_scratch_size), size_t(bin.global_scratch_align));
  }) : nullptr;
  void* profile_scratch = bin.profile_scratch_size > 0 ? at_launch(op, step, [&] {
    return host.scratch(size_t(programs * bin.profile_scratch_size), size_t(bin.profile_scratch_align));
  }) : nullptr;
  std::memcpy(&out.storage[n], &global_scratch, sizeof(void*));
  std::memcpy(&out.storage[n + 1], &profile_scratch, sizeof(void*));
  out.map_of_param[n] = out.map_of_param[n + 1] = -1;
  out.num_params = n + 2;

  std::memset(out.attrs, 0, sizeof(out.attrs));
  unsigned num_attrs = 0;
  if (bin.launch_pdl) {
    out.attrs[num_attrs].id = cu::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    out.attrs[num_attrs++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (bin.launch_cooperative_grid) {
    out.attrs[num_attrs].id = cu::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    out.attrs[num_attrs++].value.cooperative = 1;
  }
  if (bin.num_ctas != 1) {
    out.attrs[num_attrs].id = cu::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    out.attrs[num_attrs].value.clusterDim.x = unsigned(bin.num_ctas);
    out.attrs[num_attrs].value.clusterDim.y = 1;
    out.attrs[num_attrs++].value.clusterDim.z = 1;
    out.attrs[num_attrs].id = cu::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    out.attrs[num_attrs++].value.clusterSchedulingPolicyPreference = cu::CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
  }
  out.config = cu::CUlaunchConfig{};
  out.config.gridDimX = unsigned(launch_grid[0]);
  out.config.gridDimY = unsigned(launch_grid[1]);
  out.config.gridDimZ = unsigned(launch_grid[2]);
  out.config.blockDimX = unsigned(bin.block[0]);
  out.config.blockDimY = unsigned(bin.block[1]);
  out.config.blockDimZ = unsigned(bin.block[2]);
  out.config.sharedMemBytes = unsigned(bin.shared_mem);
  out.config.hStream = host.stream();
  out.config.numAttrs = num_attrs;
  out.function = at_launch(op, step, [&] { return kernel->function(args.device); });
  out.bind();
  return true;
}

void submit_launch(const PreparedLaunch& launch, const LaunchStep& step, const char* op) {
  const CudaDriver& d = cuda_driver();
  const cu::CUresult r = d.cuLaunchKernelEx(&launch.config, launch.function, const_cast<void**>(launch.params),
                                            nullptr);
  if (r != cu::CUDA_SUCCESS) {
    fail(ErrorKind::Runtime, std::string(op) + ": launching kernel " + step.kernel->name() + " (at " +
                                 step.site + ") failed: " + d.describe(r));
  }
}

// An allocation whose byte size leaves int64 is refused here, naming the op,
// rather than by the allocator with a message that names neither.
void check_allocation_size(const char* op, int index, const AllocStep& a, const int64_t* shape, int rank) {
  if (a.kind == AllocStep::Kind::EmptyLike) return;  // the size of an existing tensor
  int64_t bytes = std::max<int64_t>(unpack_dtype(a.dtype).bits / 8, 1);
  bool overflow = false;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 0) return;
    overflow = overflow || __builtin_mul_overflow(bytes, shape[d], &bytes);
  }
  if (!overflow) return;
  std::string dims;
  for (int d = 0; d < rank; ++d) dims += (d ? ", " : "") + std::to_string(shape[d]);
  fail(ErrorKind::Value, std::string(op) + ": allocation " + std::to_string(index) + " of shape [" + dims +
                             "] would need more than 2^63 bytes");
}

// Size `d` of `what` (an allocation or a view), refused when negative.
int64_t evaluate_size(const Expr& e, const EvalContext& ctx, const char* op_name, const std::string& what, int d) {
  const int64_t size = evaluate_at(e, ctx, op_name, [&] { return "size " + std::to_string(d) + " of " + what; });
  if (size < 0) {
    fail(ErrorKind::Value, std::string(op_name) + ": size " + std::to_string(d) + " of " + what + ", `" + e.text +
                               "`, is " + std::to_string(size));
  }
  return size;
}

void allocate(const AllocStep& a, int index, CallArgs& args, LaunchHost& host, const char* op_name) {
  const EvalContext ctx = args.eval();  // earlier tensors are readable too
  int64_t shape[kMaxShapeRank];
  const int rank = int(a.shape.size());
  const std::string what = "allocation " + std::to_string(index);
  for (int d = 0; d < rank; ++d) shape[d] = evaluate_size(a.shape[d], ctx, op_name, what, d);
  check_allocation_size(op_name, index, a, shape, rank);
  const int slot = args.num_slots;
  args.slots[slot] = host.allocate(slot, a, shape, rank);
  args.num_slots = slot + 1;
}

// A view costs no ATen call: its sizes and strides go into the call's arena.
void make_view(const ViewStep& v, int index, CallArgs& args, LaunchHost& host, const char* op_name) {
  const EvalContext ctx = args.eval();
  const int rank = int(v.sizes.size());
  int64_t* sizes = args.view_dims + args.view_dims_used;
  int64_t* strides = sizes + rank;
  const std::string what = "view " + std::to_string(index);
  for (int d = 0; d < rank; ++d) {
    sizes[d] = evaluate_size(v.sizes[size_t(d)], ctx, op_name, what, d);
    strides[d] = evaluate_at(v.strides[size_t(d)], ctx, op_name, [&] { return "stride " + std::to_string(d) + " of " + what; });
  }
  const int64_t offset = evaluate_at(v.offset, ctx, op_name, [&] { return "the offset of " + what; });
  const TensorArg& base = args.slots[v.base];
  const DLDataType dtype = unpack_dtype(v.dtype);
  int64_t byte_offset = 0;
  if (__builtin_mul_overflow(offset, int64_t(dtype.bits / 8), &byte_offset)) {
    fail(ErrorKind::Value, std::string(op_name) + ": view offset `" + v.offset.text + "` overflows");
  }
  args.view_dims_used += 2 * rank;
  const int slot = args.num_slots;
  args.slots[slot] = TensorArg{static_cast<char*>(base.data) + byte_offset, sizes, strides, rank, dtype};
  args.num_slots = slot + 1;
  host.add_view(slot, v, offset);
}

}  // namespace

void compute_key(const LaunchStep& step, const CallArgs& args, const char* op, SpecializationKey& key) {
  ParamValue values[kMaxKernelParams];
  evaluate_bindings(step, args, op, values);
  key_from_values(step, args, values, key);
}

void run_plan(const LaunchPlan& plan, CallArgs& args, LaunchHost& host, const char* op_name,
              LaunchObserver* observer, KeySink* keys) {
  if (!plan.launches.empty() && keys == nullptr) {
    try {
      ensure_context(args.device);
    } catch (const Error& e) {
      fail(e.kind(), std::string(op_name) + ": " + e.what());
    }
  }
  PreparedLaunch launch;
  bool allocated = false;  // the observer's OutputsAllocated comes before the first launch
  for (const PlanStep& s : plan.order) {
    switch (s.kind) {
      case StepKind::Constant: {
        const int slot = args.num_slots;
        args.slots[slot] = host.constant(slot, s.index);
        args.num_slots = slot + 1;
        continue;
      }
      case StepKind::Alloc: allocate(plan.allocs[size_t(s.index)], s.index, args, host, op_name); continue;
      case StepKind::View: make_view(plan.views[size_t(s.index)], s.index, args, host, op_name); continue;
      case StepKind::Aten: {
        const AtenStep& a = plan.aten_steps[size_t(s.index)];
        const int first = args.num_slots;
        try {
          host.run_aten(a, args, first);
        } catch (const Error& e) {  // its arguments' expressions
          fail(e.kind(), std::string(op_name) + ": " + a.name + " (at " + a.site + "): " + e.what());
        }
        args.num_slots = first + a.num_outputs;
        continue;
      }
      case StepKind::Read: {
        const ReadStep& r = plan.reads[size_t(s.index)];
        if (keys != nullptr) {
          fail(ErrorKind::NotImplemented, std::string(op_name) + ": the plan reads a value from the tensors' data (at " +
                                              r.site + "), which a dry run without the data cannot do");
        }
        host.read_values(r.slot, r, args.reads + args.num_reads);  // validate() bounded the count
        args.num_reads += r.count;
        continue;
      }
      case StepKind::Check: {
        const CheckStep& c = plan.checks[size_t(s.index)];
        const EvalContext ctx = args.eval();
        if (evaluate_at(c.condition, ctx, op_name, [&] { return "the data check at " + c.site; }) == 0) {
          throw CheckNotHeld(c);
        }
        continue;
      }
      case StepKind::Launch: break;
    }
    if (observer != nullptr && !allocated) observer->phase(CallPhase::OutputsAllocated);
    allocated = true;
    const LaunchStep& step = plan.launches[size_t(s.index)];
    if (keys != nullptr) {
      if (grid_is_empty(step, args, op_name)) continue;
      SpecializationKey key;
      compute_key(step, args, op_name, key);
      keys->key(step, key);
      continue;
    }
    if (!prepare_launch(step, args, host, op_name, launch)) continue;
    if (observer != nullptr) observer->phase(CallPhase::LaunchPrepared);
    submit_launch(launch, step, op_name);
    if (observer != nullptr) {
      observer->phase(CallPhase::LaunchSubmitted);
      observer->launched(launch);
    }
  }
  if (observer != nullptr && !allocated) observer->phase(CallPhase::OutputsAllocated);
}

}  // namespace torch_tile
