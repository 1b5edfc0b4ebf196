#include "runtime/plan/plan_serialization.h"

#include "runtime/plan/byte_io.h"
#include "runtime/error.h"
#include "runtime/kernels/kernel_cache.h"

namespace torch_tile {
namespace {

constexpr const char* kWhat = "serialized plans";

void write_binding(ByteWriter& w, const Binding& b) {
  w.pod(int32_t(b.kind));
  w.pod(b.slot);
  w.expr(b.expr);
  w.pod(b.float_value);
  w.flag(b.specialize);
  w.flag(b.specialize_alignment);
  w.flag(b.specialize_layout);
  if (b.kind == BindingKind::TensorDesc) {
    w.exprs(b.desc.shape);
    w.exprs(b.desc.strides);
    w.flag(b.desc.nan_padding);
    w.flag(b.desc.round_tf32);
    w.str(b.desc.name);
  }
}

Binding read_binding(ByteReader& r) {
  Binding b;
  const int32_t kind = r.pod<int32_t>();
  if (kind < int32_t(BindingKind::Tensor) || kind > int32_t(BindingKind::TensorDesc)) {
    r.corrupt("a binding of unknown kind " + std::to_string(kind));
  }
  b.kind = BindingKind(kind);
  b.slot = r.pod<int32_t>();
  b.expr = r.expr();
  b.float_value = r.pod<double>();
  b.specialize = r.flag();
  b.specialize_alignment = r.flag();
  b.specialize_layout = r.flag();
  if (b.kind == BindingKind::TensorDesc) {
    b.desc.shape = r.exprs();
    b.desc.strides = r.exprs();
    b.desc.nan_padding = r.flag();
    b.desc.round_tf32 = r.flag();
    b.desc.name = r.str();
  }
  return b;
}

void write_view(ByteWriter& w, const ViewStep& v) {
  w.pod(v.base);
  w.exprs(v.sizes);
  w.exprs(v.strides);
  w.expr(v.offset);
  w.pod(v.dtype);
}

ViewStep read_view(ByteReader& r) {
  ViewStep v;
  v.base = r.pod<int32_t>();
  v.sizes = r.exprs();
  v.strides = r.exprs();
  v.offset = r.expr();
  v.dtype = r.pod<uint32_t>();
  return v;
}

void write_aten(ByteWriter& w, const AtenStep& a) {
  w.str(a.name);
  w.str(a.overload);
  w.count(a.args.size());
  for (const AtenArg& arg : a.args) {
    w.pod(int32_t(arg.kind));
    w.count(arg.slots.size());
    for (int32_t s : arg.slots) w.pod(s);
    w.exprs(arg.ints);
    w.pod(arg.number);
    w.str(arg.text);
  }
  w.pod(a.num_outputs);
  w.str(a.site);
}

AtenStep read_aten(ByteReader& r) {
  AtenStep a;
  a.name = r.str();
  a.overload = r.str();
  a.args.resize(r.count(24));
  for (AtenArg& arg : a.args) {
    const int32_t kind = r.pod<int32_t>();
    if (!AtenArg::known_kind(kind)) {
      r.corrupt("an ATen argument of unknown kind " + std::to_string(kind));
    }
    arg.kind = AtenArg::Kind(kind);
    arg.slots.resize(r.count(4));
    for (int32_t& s : arg.slots) s = r.pod<int32_t>();
    arg.ints = r.exprs();
    arg.number = r.pod<double>();
    arg.text = r.str();
  }
  a.num_outputs = r.pod<int32_t>();
  a.site = r.str();
  return a;
}

void write_plan(ByteWriter& w, const LaunchPlan& p) {
  w.count(p.tensor_guards.size());
  for (const TensorGuard& g : p.tensor_guards) {
    w.pod(g.arg);
    w.pod(g.dtype);
    w.pod(g.ndim);
  }
  w.exprs(p.guards);
  w.pod(p.num_shape_guards);
  w.pod(p.num_list_tensors);
  w.count(p.allocs.size());
  for (const AllocStep& a : p.allocs) {
    w.pod(int32_t(a.kind));
    w.exprs(a.shape);
    w.pod(a.like_slot);
    w.pod(a.dtype);
    w.flag(a.zero);
  }
  w.count(p.launches.size());
  for (const LaunchStep& l : p.launches) {
    if (!l.kernel) fail(ErrorKind::Runtime, "cannot serialize a launch step without a kernel");
    w.pod(l.kernel->id());
    w.str(l.kernel->name());
    w.str(l.kernel->frontend());
    w.pod(l.config_id);
    for (const Expr& g : l.grid) w.expr(g);
    w.str(l.site);
    w.count(l.bindings.size());
    for (const Binding& b : l.bindings) write_binding(w, b);
  }
  w.count(p.views.size());
  for (const ViewStep& v : p.views) write_view(w, v);
  w.count(p.aten_steps.size());
  for (const AtenStep& a : p.aten_steps) write_aten(w, a);
  w.count(p.reads.size());
  for (const ReadStep& s : p.reads) {
    w.pod(s.slot);
    w.pod(s.count);
    w.str(s.site);
  }
  w.count(p.checks.size());
  for (const CheckStep& c : p.checks) {
    w.expr(c.condition);
    w.str(c.site);
  }
  w.count(p.order.size());
  for (const PlanStep& s : p.order) {
    w.pod(int32_t(s.kind));
    w.pod(s.index);
  }
  w.count(p.outputs.size());
  for (int32_t s : p.outputs) w.pod(s);
}

LaunchPlan read_plan(ByteReader& r, const std::function<std::shared_ptr<KernelCache>(const KernelRef&)>& resolve) {
  LaunchPlan p;
  p.tensor_guards.resize(r.count(12));
  for (TensorGuard& g : p.tensor_guards) {
    g.arg = r.pod<int32_t>();
    g.dtype = r.pod<uint32_t>();
    g.ndim = r.pod<int32_t>();
  }
  p.guards = r.exprs();
  p.num_shape_guards = r.pod<int32_t>();
  p.num_list_tensors = r.pod<int32_t>();
  p.allocs.resize(r.count(13));
  for (AllocStep& a : p.allocs) {
    const int32_t kind = r.pod<int32_t>();
    if (kind != int32_t(AllocStep::Kind::Empty) && kind != int32_t(AllocStep::Kind::EmptyLike)) {
      r.corrupt("an allocation of unknown kind " + std::to_string(kind));
    }
    a.kind = AllocStep::Kind(kind);
    a.shape = r.exprs();
    a.like_slot = r.pod<int32_t>();
    a.dtype = r.pod<uint32_t>();
    a.zero = r.flag();
  }
  p.launches.resize(r.count(8));
  for (LaunchStep& l : p.launches) {
    KernelRef ref;
    ref.id = r.pod<int64_t>();
    ref.name = r.str();
    ref.frontend = r.str();
    l.kernel = resolve(ref);
    if (!l.kernel || l.kernel->name() != ref.name || l.kernel->frontend() != ref.frontend) {
      fail(ErrorKind::Value, "serialized plans name kernel " + ref.name + " (" + ref.frontend + " kernel id " +
                                 std::to_string(ref.id) + "), which this process has not registered as such");
    }
    l.config_id = r.pod<int64_t>();
    for (Expr& g : l.grid) g = r.expr();
    l.site = r.str();
    l.bindings.resize(r.count(8));
    for (Binding& b : l.bindings) b = read_binding(r);
  }
  p.views.resize(r.count(28));
  for (ViewStep& v : p.views) v = read_view(r);
  p.aten_steps.resize(r.count(20));
  for (AtenStep& a : p.aten_steps) a = read_aten(r);
  p.reads.resize(r.count(12));
  for (ReadStep& s : p.reads) {
    s.slot = r.pod<int32_t>();
    s.count = r.pod<int32_t>();
    s.site = r.str();
  }
  p.checks.resize(r.count(12));
  for (CheckStep& c : p.checks) {
    c.condition = r.expr();
    c.site = r.str();
  }
  p.order.resize(r.count(8));
  for (PlanStep& s : p.order) {
    const int32_t kind = r.pod<int32_t>();
    if (kind < int32_t(StepKind::Alloc) || kind > int32_t(StepKind::Check)) {
      r.corrupt("a step of unknown kind " + std::to_string(kind));
    }
    s.kind = StepKind(kind);
    s.index = r.pod<int32_t>();
  }
  p.outputs.resize(r.count(4));
  for (int32_t& s : p.outputs) s = r.pod<int32_t>();
  return p;
}


}  // namespace

std::string serialize_plans(const OpPlans& op) {
  ByteWriter w;
  w.str(op.qualname);
  w.str(op.schema);
  w.count(op.arg_kinds.size());
  for (ArgKind k : op.arg_kinds) w.pod(int32_t(k));
  w.pod(op.num_returns);
  w.count(op.plans.size());
  for (const LaunchPlan& p : op.plans) {
    if (p.is_fallback()) {
      fail(ErrorKind::Value, op.qualname + ": a fallback plan (" + p.fallback + ") runs the op body, which only "
                                 "the process that defined the op has: it cannot be serialized");
    }
    if (!p.constants.empty()) {
      fail(ErrorKind::Value, op.qualname + ": a plan holds a tensor its body did not receive (first used at " +
                                 p.constants[0].site + "), which only this process has: it cannot be serialized "
                                 "(pass the tensor to the op as an argument)");
    }
    write_plan(w, p);
  }
  return frame(kPlanMagic, kPlanFormatVersion, w.out);
}

OpPlans deserialize_plans(const std::string& bytes,
                          const std::function<std::shared_ptr<KernelCache>(const KernelRef&)>& resolve) {
  ByteReader r(bytes, unframe(bytes, kPlanMagic, kPlanFormatVersion, kWhat), kWhat);
  OpPlans op;
  try {
    op.qualname = r.str();
    op.schema = r.str();
    op.arg_kinds.resize(r.count(4));
    for (ArgKind& k : op.arg_kinds) {
      const int32_t v = r.pod<int32_t>();
      if (v < int32_t(ArgKind::Tensor) || v >= int32_t(ArgKind::Count_)) {
        r.corrupt("an argument of unknown kind " + std::to_string(v));
      }
      k = ArgKind(v);
    }
    op.num_returns = r.pod<int32_t>();
    const size_t num_plans = r.count(4);
    for (size_t i = 0; i < num_plans; ++i) {
      op.plans.push_back(read_plan(r, resolve));
      op.plans.back().validate(op.qualname, int(op.arg_kinds.size()));
    }
  } catch (const Error& e) {
    // A checksummed input that does not make a valid plan is as corrupt as a damaged one.
    if (e.kind() != ErrorKind::Runtime) throw;
    r.corrupt(e.what());
  }
  if (!r.at_end()) r.corrupt("trailing data");
  return op;
}

}  // namespace torch_tile
