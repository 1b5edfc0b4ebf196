#include "plan_bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Layout.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/kernels/kernel_cache.h"
#include "runtime/kernels/kernel_registry.h"
#include "runtime/plan/launch_plan.h"
#include "runtime/launch/specialization_key.h"
#include "../torch/dtype_map.h"
#include "../torch/plan_constant.h"
#include "../torch/schema_arg_kinds.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

uint32_t packed_dtype_of(const py::handle& obj) {
  if (!THPDtype_Check(obj.ptr())) throw py::type_error("expected a torch.dtype");
  DLDataType dl{};
  const c10::ScalarType st = reinterpret_cast<THPDtype*>(obj.ptr())->scalar_type;
  if (!to_dl_dtype(st, &dl)) {
    throw py::type_error(std::string("torch_tile: a launch plan holds no tensor of dtype ") + c10::toString(st));
  }
  return pack_dtype(dl);
}

py::object torch_dtype_of(c10::ScalarType t) {
  return py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(torch::getTHPDtype(t)));
}

py::object torch_dtype_of(uint32_t packed) { return torch_dtype_of(to_scalar_type(unpack_dtype(packed))); }

// Runs `fn`, turning runtime errors into Python ValueErrors (plan construction).
template <class Fn>
auto checked(Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

Expr make_expr(std::vector<int64_t> code, std::string text) {
  Expr e;
  e.code = std::move(code);
  e.text = std::move(text);
  checked([&] { e.validate(); });
  return e;
}

std::shared_ptr<KernelCache> kernel_by_id(int64_t id) {
  std::shared_ptr<KernelCache> k = find_kernel_cache(id);
  if (!k) throw py::value_error("no registered kernel with id " + std::to_string(id));
  return k;
}

void bind_kinds(py::module_& m) {
  py::enum_<ExprOp>(m, "ExprOp", "Opcodes of plan expressions (csrc/runtime/plan/expr.h)", py::arithmetic())
      .value("CONST", ExprOp::Const).value("SIZE", ExprOp::Size).value("STRIDE", ExprOp::Stride)
      .value("NUMEL", ExprOp::Numel).value("SCALAR", ExprOp::Scalar).value("ADD", ExprOp::Add)
      .value("SUB", ExprOp::Sub).value("MUL", ExprOp::Mul).value("FLOORDIV", ExprOp::FloorDiv)
      .value("MOD", ExprOp::Mod).value("NEG", ExprOp::Neg).value("MIN", ExprOp::Min).value("MAX", ExprOp::Max)
      .value("NEXT_POW2", ExprOp::NextPow2).value("LT", ExprOp::Lt).value("LE", ExprOp::Le)
      .value("EQ", ExprOp::Eq).value("NE", ExprOp::Ne).value("GT", ExprOp::Gt).value("GE", ExprOp::Ge)
      .value("NOT", ExprOp::Not).value("BITAND", ExprOp::BitAnd).value("BITOR", ExprOp::BitOr)
      .value("BITXOR", ExprOp::BitXor).value("SHL", ExprOp::Shl).value("SHR", ExprOp::Shr)
      .value("IS_NONE", ExprOp::IsNone).value("DATA_PTR", ExprOp::DataPtr).value("STR_EQ", ExprOp::StrEq)
      .value("FLOAT_BITS", ExprOp::FloatBits).value("LIST_LEN", ExprOp::ListLen)
      .value("LIST_ITEM", ExprOp::ListItem).value("BIT_LENGTH", ExprOp::BitLength)
      .value("READ", ExprOp::Read).value("REQUIRES_GRAD", ExprOp::RequiresGrad);
  py::enum_<BindingKind>(m, "BindingKind", "How a kernel parameter gets its value (csrc/runtime/plan/launch_plan.h)", py::arithmetic())
      .value("TENSOR", BindingKind::Tensor).value("INT", BindingKind::Int).value("BOOL", BindingKind::Bool)
      .value("FLOAT", BindingKind::Float).value("CONSTEXPR", BindingKind::Constexpr)
      .value("STATIC", BindingKind::Static).value("TENSORDESC", BindingKind::TensorDesc);
  py::enum_<AllocStep::Kind>(m, "AllocKind", "Allocation steps", py::arithmetic())
      .value("EMPTY", AllocStep::Kind::Empty).value("EMPTY_LIKE", AllocStep::Kind::EmptyLike);
  py::enum_<ArgKind>(m, "ArgKind", "Kinds of op arguments", py::arithmetic())
      .value("TENSOR", ArgKind::Tensor).value("INT", ArgKind::Int).value("FLOAT", ArgKind::Float)
      .value("BOOL", ArgKind::Bool).value("STRING", ArgKind::String).value("DTYPE", ArgKind::Dtype)
      .value("OPTIONAL_TENSOR", ArgKind::OptionalTensor).value("OPTIONAL_INT", ArgKind::OptionalInt)
      .value("OPTIONAL_FLOAT", ArgKind::OptionalFloat).value("OPTIONAL_BOOL", ArgKind::OptionalBool)
      .value("OPTIONAL_STRING", ArgKind::OptionalString).value("OPTIONAL_DTYPE", ArgKind::OptionalDtype)
      .value("INT_LIST", ArgKind::IntList).value("TENSOR_LIST", ArgKind::TensorList);
  m.def("is_optional", &is_optional, py::arg("kind"), "Whether an argument of this ArgKind may be None.");
  m.def("value_kind", &value_kind, py::arg("kind"), "The kind of a present value of an ArgKind (OPTIONAL_INT -> INT).");
  py::enum_<StepKind>(m, "StepKind", "Kinds of plan steps", py::arithmetic())
      .value("ALLOC", StepKind::Alloc).value("VIEW", StepKind::View).value("ATEN", StepKind::Aten)
      .value("LAUNCH", StepKind::Launch).value("READ", StepKind::Read).value("CHECK", StepKind::Check)
      .value("CONSTANT", StepKind::Constant);
  py::enum_<AtenArg::Kind>(m, "AtenArgKind", "Kinds of ATen step arguments", py::arithmetic())
      .value("NONE", AtenArg::Kind::None).value("TENSOR", AtenArg::Kind::Tensor)
      .value("TENSOR_LIST", AtenArg::Kind::TensorList).value("OPTIONAL_TENSOR_LIST", AtenArg::Kind::OptionalTensorList)
      .value("INT", AtenArg::Kind::Int).value("INT_LIST", AtenArg::Kind::IntList).value("BOOL_LIST", AtenArg::Kind::BoolList).value("FLOAT", AtenArg::Kind::Float)
      .value("BOOL", AtenArg::Kind::Bool).value("STRING", AtenArg::Kind::String).value("DEVICE", AtenArg::Kind::Device)
      .value("SCALAR", AtenArg::Kind::Scalar).value("WRAPPED_SCALAR", AtenArg::Kind::WrappedScalar);
  m.def("enum_code", [](py::handle obj) -> int64_t {
        // How the dispatcher's boxed calls carry these: as ints.
        if (THPDtype_Check(obj.ptr())) return int64_t(reinterpret_cast<THPDtype*>(obj.ptr())->scalar_type);
        if (THPMemoryFormat_Check(obj.ptr())) return int64_t(reinterpret_cast<THPMemoryFormat*>(obj.ptr())->memory_format);
        if (THPLayout_Check(obj.ptr())) return int64_t(reinterpret_cast<THPLayout*>(obj.ptr())->layout);
        throw py::type_error("expected a torch.dtype, torch.memory_format or torch.layout");
      }, py::arg("value"), "The int a dtype, memory format or layout is in a boxed dispatcher call.");
  m.def("dtype_of_code", [](int64_t code) {
        if (code < 0 || code >= int64_t(c10::ScalarType::NumOptions)) throw py::value_error("not a ScalarType code");
        return torch_dtype_of(c10::ScalarType(code));
      }, py::arg("code"), "The torch.dtype of a ScalarType code (enum_code's inverse for dtypes).");
  // The specialization key's words (csrc/runtime/launch/specialization_key.h), for
  // the frontend that turns a key back into representative arguments.
  py::module_ kw = m.def_submodule("key_word", "Encoding of specialization-key words");
  kw.attr("NOT_SPECIALIZED") = key_word::kNotSpecialized;
  kw.attr("UNALIGNED") = key_word::kUnaligned;
  kw.attr("ALIGNED16") = key_word::kAligned16;
  kw.attr("INT32") = key_word::kInt32;
  kw.attr("INT64") = key_word::kInt64;
  kw.attr("VALUE_ANY") = key_word::kValueAny;
  kw.attr("VALUE_ONE") = key_word::kValueOne;
  kw.attr("VALUE_DIV16") = key_word::kValueDiv16;
  kw.attr("VALUE_OTHER") = key_word::kValueOther;
  py::module_ layout = kw.def_submodule("layout", "cuTile's array bits in a layout-specialised tensor's word");
  layout.attr("DTYPE_SHIFT") = array_layout::kDtypeShift;
  layout.attr("MAX_DIMS") = array_layout::kMaxDims;
  layout.attr("BASE_ALIGNED16") = array_layout::kBaseAligned16;
  layout.attr("DISJOINT") = array_layout::kDisjoint;
  layout.attr("STRIDE_16BYTES_SHIFT") = array_layout::kStride16BytesShift;
  layout.attr("STRIDE_ONE_SHIFT") = array_layout::kStrideOneShift;
  layout.attr("SIZE_DIV16_SHIFT") = array_layout::kSizeDiv16Shift;
  layout.attr("SIZE_ONE_SHIFT") = array_layout::kSizeOneShift;
  m.def(
      "arg_kind_of_type",
      [](const std::string& real_type) -> py::object {
        std::optional<ArgKind> kind = arg_kind_of_type(real_type);
        return kind ? py::cast(*kind) : py::none();
      },
      py::arg("real_type"), "The ArgKind of a schema type as its real type prints ('Optional[int]'), or None.");
  m.attr("SUPPORTED_ARG_TYPES") = kSupportedArgTypes;
  m.def("packed_dtype", [](py::handle dtype) { return packed_dtype_of(dtype); }, py::arg("dtype"),
        "A torch.dtype as the runtime's packed DLPack dtype (the word a key carries, shifted).");
  m.def("dtype_of_packed", [](uint32_t packed) { return torch_dtype_of(packed); }, py::arg("packed"),
        "The torch.dtype of a packed DLPack dtype.");
  m.def("plan_dtypes", [](bool kernel_only) {
        py::list dtypes;
        for (const c10::ScalarType t : plan_scalar_types(kernel_only)) dtypes.append(torch_dtype_of(t));
        return dtypes;
      }, py::arg("kernel_only"),
      "The torch dtypes a launch plan's tensors may have; with kernel_only, those a tile kernel takes.");
}

void bind_structures(py::module_& m) {
  py::class_<Expr>(m, "Expr", "An integer expression: postfix code over ExprOp, and its source-like text")
      .def(py::init(&make_expr), py::arg("code"), py::arg("text"))
      .def_readonly("code", &Expr::code)
      .def_readonly("text", &Expr::text)
      .def("__repr__", [](const Expr& e) { return "Expr(`" + e.text + "`)"; });

  py::class_<TensorGuard>(m, "TensorGuard", "Dtype and rank a tensor argument must have")
      .def(py::init([](int32_t arg, py::handle dtype, int32_t ndim) {
             return TensorGuard{arg, packed_dtype_of(dtype), ndim};
           }),
           py::arg("arg"), py::arg("dtype"), py::arg("ndim"))
      .def_readonly("arg", &TensorGuard::arg)
      .def_property_readonly("dtype", [](const TensorGuard& g) { return torch_dtype_of(g.dtype); })
      .def_readonly("ndim", &TensorGuard::ndim);

  py::class_<AllocStep>(m, "AllocStep", "An output allocation (empty/zeros, or like another tensor)")
      .def(py::init([](AllocStep::Kind kind, std::vector<Expr> shape, int32_t like_slot, py::handle dtype, bool zero) {
             AllocStep a;
             a.kind = kind;
             a.shape = std::move(shape);
             a.like_slot = like_slot;
             a.dtype = packed_dtype_of(dtype);
             a.zero = zero;
             return a;
           }),
           py::arg("kind"), py::arg("shape"), py::arg("like_slot"), py::arg("dtype"), py::arg("zero"))
      .def_readonly("kind", &AllocStep::kind)
      .def_readonly("shape", &AllocStep::shape)
      .def_readonly("like_slot", &AllocStep::like_slot)
      .def_property_readonly("dtype", [](const AllocStep& a) { return torch_dtype_of(a.dtype); })
      .def_readonly("zero", &AllocStep::zero);

  py::class_<DescriptorBinding>(m, "DescriptorBinding", "A host tensor descriptor over the binding's tensor slot")
      .def(py::init([](std::vector<Expr> shape, std::vector<Expr> strides, bool nan_padding, bool round_tf32,
                       std::string name) {
             return DescriptorBinding{std::move(shape), std::move(strides), nan_padding, round_tf32, std::move(name)};
           }),
           py::arg("shape"), py::arg("strides"), py::arg("nan_padding"), py::arg("round_tf32"), py::arg("name"))
      .def_readonly("shape", &DescriptorBinding::shape)
      .def_readonly("strides", &DescriptorBinding::strides)
      .def_readonly("nan_padding", &DescriptorBinding::nan_padding)
      .def_readonly("round_tf32", &DescriptorBinding::round_tf32)
      .def_readonly("name", &DescriptorBinding::name);

  py::class_<Binding>(m, "Binding", "Where one kernel parameter's value comes from")
      .def(py::init([](BindingKind kind, int32_t slot, std::optional<Expr> expr, double float_value, bool specialize,
                       bool specialize_alignment, bool specialize_layout, std::optional<DescriptorBinding> desc) {
             Binding b;
             b.kind = kind;
             b.slot = slot;
             if (expr) b.expr = std::move(*expr);
             b.float_value = float_value;
             b.specialize = specialize;
             b.specialize_alignment = specialize_alignment;
             b.specialize_layout = specialize_layout;
             if (desc) b.desc = std::move(*desc);
             return b;
           }),
           py::arg("kind"), py::arg("slot") = -1, py::arg("expr") = py::none(), py::arg("float_value") = 0.0,
           py::arg("specialize") = true, py::arg("specialize_alignment") = true, py::arg("specialize_layout") = false,
           py::arg("desc") = py::none())
      .def_readonly("kind", &Binding::kind)
      .def_readonly("slot", &Binding::slot)
      .def_property_readonly("expr", [](const Binding& b) -> std::optional<Expr> {
        return b.expr.code.empty() ? std::nullopt : std::optional<Expr>(b.expr);
      })
      .def_readonly("float_value", &Binding::float_value)
      .def_readonly("specialize", &Binding::specialize)
      .def_readonly("specialize_alignment", &Binding::specialize_alignment)
      .def_readonly("specialize_layout", &Binding::specialize_layout)
      .def_property_readonly("desc", [](const Binding& b) -> std::optional<DescriptorBinding> {
        return b.kind == BindingKind::TensorDesc ? std::optional<DescriptorBinding>(b.desc) : std::nullopt;
      });

  py::class_<LaunchStep>(m, "LaunchStep", "One kernel launch: kernel, static configuration, grid, bindings")
      .def(py::init([](int64_t kernel, int64_t config, std::vector<Expr> grid, std::vector<Binding> bindings,
                       std::string site) {
             if (grid.size() != 3) throw py::value_error("a launch step's grid has 3 expressions");
             LaunchStep l;
             l.kernel = kernel_by_id(kernel);
             l.config_id = config;
             for (int d = 0; d < 3; ++d) l.grid[d] = grid[size_t(d)];
             l.bindings = std::move(bindings);
             l.site = std::move(site);
             return l;
           }),
           py::arg("kernel"), py::arg("config"), py::arg("grid"), py::arg("bindings"), py::arg("site"))
      .def_property_readonly("kernel", [](const LaunchStep& l) { return l.kernel->id(); })
      .def_property_readonly("kernel_name", [](const LaunchStep& l) { return l.kernel->name(); })
      .def_readonly("config", &LaunchStep::config_id)
      .def_property_readonly("grid", [](const LaunchStep& l) { return std::vector<Expr>(l.grid, l.grid + 3); })
      .def_readonly("bindings", &LaunchStep::bindings)
      .def_readonly("site", &LaunchStep::site)
      .def("__repr__", [](const LaunchStep& l) { return "LaunchStep(" + l.kernel->name() + " at " + l.site + ")"; });

  py::class_<ViewStep>(m, "ViewStep", "A view of an earlier tensor: sizes, strides, offset (elements)")
      .def(py::init([](int32_t base, std::vector<Expr> sizes, std::vector<Expr> strides, Expr offset, py::handle dtype) {
             return ViewStep{base, std::move(sizes), std::move(strides), std::move(offset), packed_dtype_of(dtype)};
           }),
           py::arg("base"), py::arg("sizes"), py::arg("strides"), py::arg("offset"), py::arg("dtype"))
      .def_readonly("base", &ViewStep::base)
      .def_readonly("sizes", &ViewStep::sizes)
      .def_readonly("strides", &ViewStep::strides)
      .def_readonly("offset", &ViewStep::offset)
      .def_property_readonly("dtype", [](const ViewStep& v) { return torch_dtype_of(v.dtype); });

  py::class_<AtenArg>(m, "AtenArg", "One argument of an ATen step (see AtenArgKind)")
      .def(py::init([](AtenArg::Kind kind, std::vector<int32_t> slots, std::vector<Expr> ints, double number,
                       std::string text) {
             return AtenArg{kind, std::move(slots), std::move(ints), number, std::move(text)};
           }),
           py::arg("kind"), py::arg("slots") = std::vector<int32_t>{}, py::arg("ints") = std::vector<Expr>{},
           py::arg("number") = 0.0, py::arg("text") = "")
      .def_readonly("kind", &AtenArg::kind)
      .def_readonly("slots", &AtenArg::slots)
      .def_readonly("ints", &AtenArg::ints)
      .def_readonly("number", &AtenArg::number)
      .def_readonly("text", &AtenArg::text);

  py::class_<AtenStep>(m, "AtenStep", "An ATen operation replayed through the dispatcher")
      .def(py::init([](std::string name, std::string overload, std::vector<AtenArg> args, int32_t num_outputs,
                       std::string site) {
             AtenStep a;
             a.name = std::move(name);
             a.overload = std::move(overload);
             a.args = std::move(args);
             a.num_outputs = num_outputs;
             a.site = std::move(site);
             return a;
           }),
           py::arg("name"), py::arg("overload"), py::arg("args"), py::arg("num_outputs"), py::arg("site"))
      .def_readonly("name", &AtenStep::name)
      .def_readonly("overload", &AtenStep::overload)
      .def_readonly("args", &AtenStep::args)
      .def_readonly("num_outputs", &AtenStep::num_outputs)
      .def_readonly("site", &AtenStep::site)
      .def("__repr__", [](const AtenStep& a) {
        return "AtenStep(" + a.name + (a.overload.empty() ? "" : "." + a.overload) + " at " + a.site + ")";
      });

  py::class_<ReadStep>(m, "ReadStep", "Values read from a tensor's data on the host (`.item()`, `.tolist()`)")
      .def(py::init([](int32_t slot, std::string site, int32_t count) {
             return ReadStep{slot, count, std::move(site)};
           }),
           py::arg("slot"), py::arg("site"), py::arg("count") = 1)
      .def_readonly("slot", &ReadStep::slot)
      .def_readonly("count", &ReadStep::count)
      .def_readonly("site", &ReadStep::site);

  py::class_<CheckStep>(m, "CheckStep", "A condition on values read from the data that the later steps assume")
      .def(py::init([](Expr condition, std::string site) { return CheckStep{std::move(condition), std::move(site)}; }),
           py::arg("condition"), py::arg("site"))
      .def_readonly("condition", &CheckStep::condition)
      .def_readonly("site", &CheckStep::site);

  py::class_<ConstantStep>(m, "ConstantStep",
                           "A tensor the body did not receive, held by the plan (weakly: its owner frees it)")
      .def(py::init([](const at::Tensor& tensor, std::string site) {
             return checked([&] { return hold_constant(tensor, std::move(site)); });
           }),
           py::arg("tensor"), py::arg("site"))
      .def_readonly("sizes", &ConstantStep::sizes)
      .def_readonly("strides", &ConstantStep::strides)
      .def_property_readonly("dtype", [](const ConstantStep& c) { return torch_dtype_of(c.dtype); })
      .def_readonly("site", &ConstantStep::site)
      .def("tensor", [](const ConstantStep& c) -> std::optional<at::Tensor> {
             at::Tensor t = constant_tensor(c);
             if (!t.defined()) return std::nullopt;
             return t;
           }, "The tensor, where it is still what the plan traced (dtype, sizes, strides); else None.")
      .def("__repr__", [](const ConstantStep& c) { return "ConstantStep(at " + c.site + ")"; });

  py::class_<PlanStep>(m, "PlanStep", "One entry of a plan's order: the index-th step of its kind")
      .def(py::init([](StepKind kind, int32_t index) { return PlanStep{kind, index}; }), py::arg("kind"),
           py::arg("index"))
      .def_readonly("kind", &PlanStep::kind)
      .def_readonly("index", &PlanStep::index);

  py::class_<BackwardSpec, std::shared_ptr<BackwardSpec>>(
      m, "BackwardSpec", "What a forward keeps for its native backward (traced from setup_context)")
      .def(py::init([](std::string gradient_op, std::string reason, std::vector<int32_t> saved, std::vector<Expr> ints,
                       std::vector<int32_t> float_args, std::vector<double> float_values,
                       std::vector<uint8_t> differentiable, bool materialize_grads) {
             auto b = std::make_shared<BackwardSpec>();
             b->gradient_op = std::move(gradient_op);
             b->reason = std::move(reason);
             b->saved = std::move(saved);
             b->ints = std::move(ints);
             b->float_args = std::move(float_args);
             b->float_values = std::move(float_values);
             b->differentiable = std::move(differentiable);
             b->materialize_grads = materialize_grads;
             return b;
           }),
           py::arg("gradient_op"), py::arg("reason") = "", py::arg("saved") = std::vector<int32_t>{},
           py::arg("ints") = std::vector<Expr>{}, py::arg("float_args") = std::vector<int32_t>{},
           py::arg("float_values") = std::vector<double>{}, py::arg("differentiable") = std::vector<uint8_t>{},
           py::arg("materialize_grads") = true)
      .def_readonly("gradient_op", &BackwardSpec::gradient_op)
      .def_readonly("reason", &BackwardSpec::reason)
      .def_readonly("saved", &BackwardSpec::saved)
      .def_readonly("ints", &BackwardSpec::ints)
      .def_readonly("float_args", &BackwardSpec::float_args)
      .def_readonly("float_values", &BackwardSpec::float_values)
      .def_readonly("differentiable", &BackwardSpec::differentiable)
      .def_readonly("materialize_grads", &BackwardSpec::materialize_grads);

  py::class_<LaunchPlan>(m, "LaunchPlan", "What one traced case of an op body does: guards, then steps")
      .def(py::init([](std::vector<TensorGuard> tensor_guards, std::vector<Expr> guards, int32_t num_shape_guards,
                       std::vector<AllocStep> allocs, std::vector<LaunchStep> launches, std::vector<int32_t> outputs,
                       std::vector<ViewStep> views, std::vector<AtenStep> aten_steps,
                       std::optional<std::vector<PlanStep>> order, int32_t num_list_tensors,
                       std::shared_ptr<BackwardSpec> backward, std::string fallback, std::vector<ReadStep> reads,
                       std::vector<CheckStep> checks, std::vector<ConstantStep> constants) {
             LaunchPlan p;
             p.reads = std::move(reads);
             p.checks = std::move(checks);
             p.constants = std::move(constants);
             p.backward = std::move(backward);
             p.fallback = std::move(fallback);
             p.num_list_tensors = num_list_tensors;
             p.tensor_guards = std::move(tensor_guards);
             p.guards = std::move(guards);
             p.num_shape_guards = num_shape_guards;
             p.allocs = std::move(allocs);
             p.launches = std::move(launches);
             p.outputs = std::move(outputs);
             p.views = std::move(views);
             p.aten_steps = std::move(aten_steps);
             if (order) {
               p.order = std::move(*order);
             } else {  // allocations, then launches
               if (!p.views.empty() || !p.aten_steps.empty() || !p.reads.empty() || !p.checks.empty() ||
                   !p.constants.empty()) {
                 throw py::value_error("a plan with views, ATen, Read, Check or Constant steps needs an order");
               }
               for (size_t i = 0; i < p.allocs.size(); ++i) p.order.push_back({StepKind::Alloc, int32_t(i)});
               for (size_t i = 0; i < p.launches.size(); ++i) p.order.push_back({StepKind::Launch, int32_t(i)});
             }
             return p;
           }),
           py::arg("tensor_guards"), py::arg("guards"), py::arg("num_shape_guards"), py::arg("allocs"),
           py::arg("launches"), py::arg("outputs"), py::arg("views") = std::vector<ViewStep>{},
           py::arg("aten_steps") = std::vector<AtenStep>{}, py::arg("order") = py::none(),
           py::arg("num_list_tensors") = 0, py::arg("backward") = nullptr, py::arg("fallback") = "",
           py::arg("reads") = std::vector<ReadStep>{}, py::arg("checks") = std::vector<CheckStep>{},
           py::arg("constants") = std::vector<ConstantStep>{})
      .def_readonly("fallback", &LaunchPlan::fallback,
                    "Why the calls this plan selects run the op body in Python (empty: a native plan)")
      .def_readonly("views", &LaunchPlan::views)
      .def_readonly("aten_steps", &LaunchPlan::aten_steps)
      .def_readonly("reads", &LaunchPlan::reads)
      .def_readonly("checks", &LaunchPlan::checks)
      .def_readonly("constants", &LaunchPlan::constants)
      .def_readonly("order", &LaunchPlan::order)
      .def_readonly("tensor_guards", &LaunchPlan::tensor_guards)
      .def_readonly("guards", &LaunchPlan::guards)
      .def_readonly("num_shape_guards", &LaunchPlan::num_shape_guards)
      .def_readonly("num_list_tensors", &LaunchPlan::num_list_tensors)
      .def_property_readonly("shape_guards", [](const LaunchPlan& p) {
        return std::vector<Expr>(p.guards.begin(), p.guards.begin() + p.num_shape_guards);
      })
      .def_readonly("allocs", &LaunchPlan::allocs)
      .def_readonly("launches", &LaunchPlan::launches)
      .def_readonly("outputs", &LaunchPlan::outputs)
      .def_readonly("backward", &LaunchPlan::backward)
      .def("__repr__", [](const LaunchPlan& p) {
        return "LaunchPlan(" + std::to_string(p.guards.size()) + " guards, " + std::to_string(p.allocs.size()) +
               " allocations, " + std::to_string(p.views.size()) + " views, " + std::to_string(p.aten_steps.size()) +
               " ATen steps, " + std::to_string(p.launches.size()) + " launches, outputs " +
               std::to_string(p.outputs.size()) + ")";
      })
      .def("validate", [](const LaunchPlan& p, const std::string& op, int num_args) {
        checked([&] { p.validate(op, num_args); });
      }, py::arg("op"), py::arg("num_args"), "Checks slots, ranks and expressions (ValueError naming `op`).");
}

}  // namespace

py::dict op_plans_to_python(const OpPlans& op) {
  py::dict d;
  d["qualname"] = op.qualname;
  d["schema"] = op.schema;
  d["arg_kinds"] = op.arg_kinds;
  d["num_returns"] = op.num_returns;
  d["plans"] = op.plans;
  return d;
}

void bind_plan_format(py::module_& m) {
  bind_kinds(m);
  bind_structures(m);
}

}  // namespace torch_tile
