// torch_tile::define_op (csrc/include/torch_tile/op_definition.h): ops whose
// body is a C++ function building a launch plan over CUDA C++ kernels. The
// body runs where a Python body would be traced (NativeOp's tracer, on a miss),
// with the call's arguments; it records guards, allocations and launches into
// the same LaunchPlan, which NativeOp validates, installs and runs.
#include <torch_tile/op_definition.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/frontend/function_schema_parser.h>

#include <algorithm>
#include <utility>

#include "runtime/plan/byte_io.h"
#include "runtime/kernels/cuda_source_kernels.h"
#include "runtime/error.h"
#include "runtime/kernels/kernel_registry.h"
#include "runtime/plan/limits.h"
#include "runtime/plan/plan_serialization.h"
#include "dtype_map.h"
#include "error_translation.h"
#include "native_op.h"
#include "schema_arg_kinds.h"

namespace torch_tile {

// ---- integer expressions ----------------------------------------------------

namespace {

std::vector<int64_t> join(const IntExpr& a, const IntExpr& b, ExprOp op) {
  std::vector<int64_t> code = a.code();
  code.insert(code.end(), b.code().begin(), b.code().end());
  code.push_back(int64_t(op));
  return code;
}

IntExpr binary(const IntExpr& a, const IntExpr& b, ExprOp op, const char* symbol) {
  return IntExpr(join(a, b, op), "(" + a.text() + " " + symbol + " " + b.text() + ")");
}

IntExpr call(const char* name, const IntExpr& a, const IntExpr& b, ExprOp op) {
  return IntExpr(join(a, b, op), std::string(name) + "(" + a.text() + ", " + b.text() + ")");
}

IntExpr unary(const IntExpr& a, ExprOp op, const std::string& text) {
  std::vector<int64_t> code = a.code();
  code.push_back(int64_t(op));
  return IntExpr(std::move(code), text);
}

IntExpr read(std::vector<int64_t> code, std::string text) { return IntExpr(std::move(code), std::move(text)); }

}  // namespace

IntExpr::IntExpr(int64_t value) : code_{int64_t(ExprOp::Const), value}, text_(std::to_string(value)) {}

IntExpr operator+(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Add, "+"); }
IntExpr operator-(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Sub, "-"); }
IntExpr operator*(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Mul, "*"); }
IntExpr operator/(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::FloorDiv, "//"); }
IntExpr operator%(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Mod, "%"); }
IntExpr operator-(const IntExpr& a) { return unary(a, ExprOp::Neg, "-" + a.text()); }
IntExpr operator<(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Lt, "<"); }
IntExpr operator<=(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Le, "<="); }
IntExpr operator==(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Eq, "=="); }
IntExpr operator!=(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Ne, "!="); }
IntExpr operator>(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Gt, ">"); }
IntExpr operator>=(const IntExpr& a, const IntExpr& b) { return binary(a, b, ExprOp::Ge, ">="); }
IntExpr operator!(const IntExpr& a) { return unary(a, ExprOp::Not, "not " + a.text()); }
IntExpr operator&&(const IntExpr& a, const IntExpr& b) {
  return IntExpr(join(a != 0, b != 0, ExprOp::BitAnd), "(" + a.text() + " and " + b.text() + ")");
}
IntExpr operator||(const IntExpr& a, const IntExpr& b) {
  return IntExpr(join(a != 0, b != 0, ExprOp::BitOr), "(" + a.text() + " or " + b.text() + ")");
}
IntExpr min(const IntExpr& a, const IntExpr& b) { return call("min", a, b, ExprOp::Min); }
IntExpr max(const IntExpr& a, const IntExpr& b) { return call("max", a, b, ExprOp::Max); }
IntExpr ceil_div(const IntExpr& a, const IntExpr& b) {
  // -((-a) // b): Python's ceiling division, one expression.
  return IntExpr((-(-a / b)).code(), "cdiv(" + a.text() + ", " + b.text() + ")");
}
IntExpr next_power_of_2(const IntExpr& a) { return unary(a, ExprOp::NextPow2, "next_power_of_2(" + a.text() + ")"); }

// ---- tensors and kernel arguments -------------------------------------------

int64_t PlanTensor::checked_dim(int64_t dim) const {
  const int64_t d = dim < 0 ? dim + ndim_ : dim;
  TORCH_CHECK_INDEX(d >= 0 && d < ndim_, "torch_tile: dimension ", dim, " of ", name_, ", which has ", ndim_,
                    " dimensions");
  return d;
}

IntExpr PlanTensor::size(int64_t dim) const {
  const int64_t d = checked_dim(dim);
  return read({int64_t(ExprOp::Size), slot_, d}, name_ + ".size(" + std::to_string(d) + ")");
}

IntExpr PlanTensor::stride(int64_t dim) const {
  const int64_t d = checked_dim(dim);
  return read({int64_t(ExprOp::Stride), slot_, d}, name_ + ".stride(" + std::to_string(d) + ")");
}

IntExpr PlanTensor::numel() const { return read({int64_t(ExprOp::Numel), slot_}, name_ + ".numel()"); }

IntExpr PlanTensor::is_contiguous() const {
  // As torch decides it: empty tensors are contiguous; otherwise each dimension longer than 1 has the stride
  // of the later sizes' product.
  IntExpr all = numel() == 0;
  IntExpr dense = 1;
  IntExpr expected = 1;
  for (int64_t d = ndim_ - 1; d >= 0; --d) {
    dense = dense && (size(d) == 1 || stride(d) == expected);
    expected = expected * size(d);
  }
  all = all || dense;
  return IntExpr(all.code(), name_ + ".is_contiguous()");
}

KernelArg KernelArg::pointer(const PlanTensor& t) { return KernelArg(Kind::Pointer, t.slot(), 0, 0.0); }
KernelArg KernelArg::i32(IntExpr v) { return KernelArg(Kind::I32, -1, std::move(v), 0.0); }
KernelArg KernelArg::i64(IntExpr v) { return KernelArg(Kind::I64, -1, std::move(v), 0.0); }
KernelArg KernelArg::boolean(IntExpr v) { return KernelArg(Kind::Bool, -1, v != 0, 0.0); }
KernelArg KernelArg::f32(FloatValue v) { return KernelArg(Kind::F32, -1, 0, v); }
KernelArg KernelArg::f64(FloatValue v) { return KernelArg(Kind::F64, -1, 0, v); }

namespace {

CudaSpecialization runtime_specialization(Specialization s) {
  switch (s) {
    case Specialization::None: return CudaSpecialization::None;
    case Specialization::Triton: return CudaSpecialization::Triton;
    case Specialization::CuTile: return CudaSpecialization::CuTile;
  }
  TORCH_CHECK_VALUE(false, "torch_tile::CudaKernel: unknown Specialization ", int(s));
}

}  // namespace

CudaKernel::CudaKernel(std::string source, std::string name, std::vector<std::string> options,
                       Specialization specialize)
    : name_(std::move(name)), specialize_(specialize) {
  const CudaSpecialization runtime = runtime_specialization(specialize);
  id_ = translating_errors([&] {
    return register_cuda_source_kernel(CudaSourceKernel{std::move(source), name_, std::move(options), runtime});
  });
}

CudaKernel CudaKernel::from_file(const std::string& path, std::string name, std::vector<std::string> options,
                                 Specialization specialize) {
  std::string source = translating_errors([&] { return read_file(path, "torch_tile::CudaKernel::from_file"); });
  return CudaKernel(std::move(source), std::move(name), std::move(options), specialize);
}

std::string cuda_type(c10::ScalarType dtype) {
  const std::string name = translating_errors([&] { return cuda_element_type(pack_dtype(dl_dtype_of(dtype))); });
  TORCH_CHECK_TYPE(!name.empty(), "torch_tile: no C++ element type for ", c10::toString(dtype));
  return name;
}

// ---- the builder --------------------------------------------------------------

namespace detail {

// One run of a body: the op, the call it serves, and the plan it builds.
struct PlanUnderConstruction {
  NativeOp& op;
  const CallArgs& args;
  std::unique_ptr<LaunchPlan> plan = std::make_unique<LaunchPlan>();
  int32_t next_slot;  // the slot the next allocation takes
  bool returned = false;

  PlanUnderConstruction(NativeOp& o, const CallArgs& a) : op(o), args(a), next_slot(a.num_slots) {}

  [[noreturn]] void error(ErrorKind kind, const std::string& what) const { fail(kind, op.qualname() + ": " + what); }

  // A condition's value for this call: it may read only the arguments (the body's tensors do not exist yet).
  bool evaluate(const IntExpr& condition) const {
    Expr e{condition.code(), condition.text()};
    e.validate();
    if (e.max_slot_read() >= args.num_slots) {
      error(ErrorKind::Value, "`" + condition.text() + "` reads a tensor the body allocates; holds() and check() "
                              "may read only the op's arguments");
    }
    return e.evaluate(args.eval()) != 0;
  }

  void guard(const IntExpr& condition) { plan->guards.push_back(Expr{condition.code(), condition.text()}); }
};

}  // namespace detail

const std::string& OpBuilder::op_name() const { return plan_.op.qualname(); }

int32_t OpBuilder::argument(const std::string& arg, const char* expected) const {
  const std::vector<std::string>& names = plan_.op.arg_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == arg) return int32_t(i);
  }
  plan_.error(ErrorKind::Value, "the body asks for " + std::string(expected) + " argument '" + arg +
                                    "', which the schema does not have");
}

PlanTensor OpBuilder::tensor(const std::string& arg) {
  const int32_t i = argument(arg, "tensor");
  const ArgKind kind = plan_.op.arg_kinds()[size_t(i)];
  if (value_kind(kind) != ArgKind::Tensor) plan_.error(ErrorKind::Value, "argument '" + arg + "' is not a Tensor");
  const TensorArg& t = plan_.args.slots[i];
  if (t.sizes == nullptr) plan_.error(ErrorKind::Value, "tensor argument '" + arg + "' is None in this call");
  return PlanTensor(i, t.ndim, to_scalar_type(t.dtype), arg);
}

IntExpr OpBuilder::int_arg(const std::string& arg) {
  const int32_t i = argument(arg, "int");
  const ArgKind kind = value_kind(plan_.op.arg_kinds()[size_t(i)]);
  if (kind != ArgKind::Int && kind != ArgKind::Bool) plan_.error(ErrorKind::Value, "argument '" + arg + "' is not an int or bool");
  if (plan_.args.none_mask & (uint64_t(1) << i)) plan_.error(ErrorKind::Value, "argument '" + arg + "' is None in this call");
  return read({int64_t(ExprOp::Scalar), i}, arg);
}

FloatValue OpBuilder::float_arg(const std::string& arg) {
  const int32_t i = argument(arg, "float");
  if (value_kind(plan_.op.arg_kinds()[size_t(i)]) != ArgKind::Float) {
    plan_.error(ErrorKind::Value, "argument '" + arg + "' is not a float");
  }
  if (plan_.args.none_mask & (uint64_t(1) << i)) plan_.error(ErrorKind::Value, "argument '" + arg + "' is None in this call");
  return FloatValue(i, plan_.args.floats[i]);
}

bool OpBuilder::is_none(const std::string& arg) {
  const int32_t i = argument(arg, "optional");
  return (plan_.args.none_mask & (uint64_t(1) << i)) != 0;  // every optional argument's None-ness is guarded
}

bool OpBuilder::holds(const IntExpr& condition) {
  const bool value = plan_.evaluate(condition);
  plan_.guard(value ? condition : !condition);
  return value;
}

void OpBuilder::check(const IntExpr& condition, const std::string& message) {
  if (!plan_.evaluate(condition)) plan_.error(ErrorKind::Value, message + " (`" + condition.text() + "` is false)");
  plan_.guard(condition);
}

void OpBuilder::refuse(const std::string& message) { plan_.error(ErrorKind::Value, message); }

PlanTensor OpBuilder::allocate(const std::vector<IntExpr>* shape, const PlanTensor* like, c10::ScalarType dtype,
                               bool zero) {
  LaunchPlan& plan = *plan_.plan;
  AllocStep step;
  step.dtype = pack_dtype(dl_dtype_of(dtype));
  step.zero = zero;
  int64_t ndim = 0;
  if (like != nullptr) {
    step.kind = AllocStep::Kind::EmptyLike;
    step.like_slot = like->slot();
    ndim = like->dim();
  } else {
    step.kind = AllocStep::Kind::Empty;
    for (const IntExpr& s : *shape) step.shape.push_back(Expr{s.code(), s.text()});
    ndim = int64_t(shape->size());
  }
  plan.order.push_back(PlanStep{StepKind::Alloc, int32_t(plan.allocs.size())});
  plan.allocs.push_back(std::move(step));
  plan.num_shape_guards = int32_t(plan.guards.size());  // guards so far can change output shapes
  const int32_t slot = plan_.next_slot++;
  return PlanTensor(slot, ndim, dtype, "out" + std::to_string(plan.allocs.size() - 1));
}

PlanTensor OpBuilder::empty(const std::vector<IntExpr>& shape, c10::ScalarType dtype) {
  return allocate(&shape, nullptr, dtype, false);
}
PlanTensor OpBuilder::empty_like(const PlanTensor& like, std::optional<c10::ScalarType> dtype) {
  return allocate(nullptr, &like, dtype.value_or(like.dtype()), false);
}
PlanTensor OpBuilder::zeros(const std::vector<IntExpr>& shape, c10::ScalarType dtype) {
  return allocate(&shape, nullptr, dtype, true);
}
PlanTensor OpBuilder::zeros_like(const PlanTensor& like, std::optional<c10::ScalarType> dtype) {
  return allocate(nullptr, &like, dtype.value_or(like.dtype()), true);
}

void OpBuilder::launch(const CudaKernel& kernel, const std::vector<IntExpr>& grid, BlockDim block,
                       const std::vector<KernelArg>& args, const LaunchOptions& options) {
  const std::string what = "kernel " + kernel.name();
  if (grid.empty() || grid.size() > 3) plan_.error(ErrorKind::Value, what + ": a grid has 1 to 3 dimensions");
  const std::string block_error = block_problem(block.x, block.y, block.z);
  if (!block_error.empty()) plan_.error(ErrorKind::Value, what + ": " + block_error);
  if (options.shared_mem < 0) plan_.error(ErrorKind::Value, what + ": negative shared_mem");
  std::shared_ptr<KernelCache> cache = find_kernel_cache(kernel.id());
  if (!cache) plan_.error(ErrorKind::Runtime, what + " is not registered");
  // Triton's key rules for the bindings, cuTile's layout bits for the tensors, or dtypes and widths only.
  const bool triton = kernel.specialization() == Specialization::Triton;
  const bool layout = kernel.specialization() == Specialization::CuTile;
  LaunchStep step;
  step.kernel = std::move(cache);
  step.site = "C++ body of " + plan_.op.qualname();
  for (size_t d = 0; d < 3; ++d) {
    const IntExpr g = d < grid.size() ? grid[d] : IntExpr(1);
    step.grid[d] = Expr{g.code(), g.text()};
  }
  CudaSourceLaunchConfig config;
  config.kernel = kernel.id();
  config.template_args = options.template_args;
  config.block = {block.x, block.y, block.z};
  config.shared_mem = options.shared_mem;
  for (const KernelArg& a : args) {
    Binding b;
    b.specialize = triton;
    b.specialize_alignment = triton;
    ParamType type = ParamType::Pointer;
    switch (a.kind_) {
      case KernelArg::Kind::Pointer:
        b.kind = BindingKind::Tensor;
        b.slot = a.slot_;
        b.specialize_layout = layout;
        break;
      case KernelArg::Kind::I32:
      case KernelArg::Kind::I64:
        b.kind = BindingKind::Int;
        b.expr = Expr{a.value_.code(), a.value_.text()};
        type = a.kind_ == KernelArg::Kind::I32 ? ParamType::I32 : ParamType::I64;
        break;
      case KernelArg::Kind::Bool:
        b.kind = BindingKind::Bool;
        b.expr = Expr{a.value_.code(), a.value_.text()};
        type = ParamType::U8;
        break;
      case KernelArg::Kind::F32:
      case KernelArg::Kind::F64:
        b.kind = BindingKind::Float;
        b.slot = a.float_.arg_;
        b.float_value = a.float_.value_;
        type = a.kind_ == KernelArg::Kind::F32 ? ParamType::F32 : ParamType::F64;
        break;
    }
    config.kinds.push_back(b.kind);
    config.param_types.push_back(type);
    step.bindings.push_back(std::move(b));
  }
  step.config_id = register_cuda_source_launch_config(config);
  LaunchPlan& plan = *plan_.plan;
  plan.order.push_back(PlanStep{StepKind::Launch, int32_t(plan.launches.size())});
  plan.launches.push_back(std::move(step));
}

void OpBuilder::returns(const std::vector<PlanTensor>& outputs) {
  if (plan_.returned) plan_.error(ErrorKind::Value, "the body calls returns() twice");
  std::vector<int32_t>& slots = plan_.plan->outputs;
  for (const PlanTensor& t : outputs) {
    if (t.slot() < plan_.args.num_slots) {
      plan_.error(ErrorKind::Value, "returns() takes tensors the body allocated, not argument '" + t.name_ + "'");
    }
    if (std::find(slots.begin(), slots.end(), t.slot()) != slots.end()) {
      plan_.error(ErrorKind::Value, "returns() names " + t.name_ + " twice; return distinct tensors");
    }
    slots.push_back(t.slot());
  }
  plan_.returned = true;
}

// ---- definition and registration ----------------------------------------------

namespace {

// NativeOp's tracer for an op defined in C++: runs the body for the call's case.
class CppBodyTracer final : public PlanTracer {
 public:
  explicit CppBodyTracer(OpBody body) : body_(std::move(body)) {}

  std::unique_ptr<LaunchPlan> trace(NativeOp& op, const CallArgs& args, const torch::jit::Stack&, size_t,
                                    bool) override {
    detail::PlanUnderConstruction building(op, args);
    LaunchPlan& plan = *building.plan;
    // The case: every tensor argument's dtype and rank, and which optional arguments are None.
    for (int32_t i = 0; i < args.num_args; ++i) {
      const ArgKind kind = op.arg_kinds()[size_t(i)];
      if (is_optional(kind)) {
        const IntExpr none = read({int64_t(ExprOp::IsNone), i}, op.arg_names()[size_t(i)] + " is None");
        building.guard((args.none_mask & (uint64_t(1) << i)) ? none : !none);
      }
      if (value_kind(kind) == ArgKind::Tensor && args.slots[i].sizes != nullptr) {
        plan.tensor_guards.push_back(TensorGuard{i, pack_dtype(args.slots[i].dtype), args.slots[i].ndim});
      }
    }
    OpBuilder builder(building);
    body_(builder);
    if (!building.returned) building.error(ErrorKind::Value, "the body did not call returns()");
    return std::move(building.plan);
  }

 private:
  OpBody body_;
};

}  // namespace

void define_op(const std::string& schema, OpBody body) {
  translating_errors([&] {
    if (!body) fail(ErrorKind::Value, "torch_tile::define_op(" + schema + "): no body");
    const c10::FunctionSchema parsed = torch::jit::parseSchema(schema);
    const std::string qualname = parsed.name();
    if (!parsed.overload_name().empty()) fail(ErrorKind::Value, qualname + ": overload names are not supported");
    if (find_native_op(qualname) != nullptr ||
        c10::Dispatcher::singleton().findSchema({qualname.c_str(), ""}).has_value()) {
      fail(ErrorKind::Value, qualname + " is already defined");
    }
    if (parsed.arguments().size() > size_t(kMaxOpArgs)) {
      fail(ErrorKind::NotImplemented, qualname + ": more than " + std::to_string(kMaxOpArgs) + " arguments");
    }
    std::vector<ArgKind> kinds;
    for (const c10::Argument& a : parsed.arguments()) {
      const std::optional<ArgKind> kind = arg_kind_of_type(a.real_type()->annotation_str());
      if (!kind || *kind == ArgKind::TensorList) {
        fail(ErrorKind::Value, qualname + ": argument '" + a.name() + "' has type " + a.real_type()->annotation_str() +
                                   "; ops defined in C++ take " + kSupportedArgTypes + " except list[Tensor]");
      }
      if (a.alias_info() != nullptr && a.alias_info()->isWrite()) {
        fail(ErrorKind::Value, qualname + ": argument '" + a.name() + "' is written (" + schema +
                                   "); ops defined in C++ return new tensors and write no argument");
      }
      kinds.push_back(*kind);
    }
    if (std::none_of(kinds.begin(), kinds.end(), [](ArgKind k) { return value_kind(k) == ArgKind::Tensor; })) {
      fail(ErrorKind::Value, qualname + ": an op defined in C++ needs a Tensor argument (its device decides where it runs)");
    }
    for (const c10::Argument& r : parsed.returns()) {
      if (r.type()->kind() != c10::TypeKind::TensorType) {
        fail(ErrorKind::Value, qualname + ": ops defined in C++ return tensors; the schema returns " + r.type()->str());
      }
    }
    register_native_meta(define_native_op(qualname, schema.substr(schema.find('(')), kinds,
                                          int(parsed.returns().size()),
                                          std::make_shared<CppBodyTracer>(std::move(body)), "defined in C++"));
  });
}

std::string export_plans(const std::string& qualname) {
  return translating_errors([&] {
    std::shared_ptr<NativeOp> op = find_native_op(qualname);
    if (!op) fail(ErrorKind::Value, "torch_tile::export_plans: no tile op '" + qualname + "'");
    return serialize_plans(op->export_plans());
  });
}

}  // namespace torch_tile
