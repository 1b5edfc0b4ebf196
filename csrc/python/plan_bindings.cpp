#include "plan_bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>

#include <optional>
#include <string>
#include <vector>

#include "../runtime/error.h"
#include "../runtime/kernel_cache.h"
#include "../runtime/kernel_registry.h"
#include "../runtime/launch_plan.h"
#include "../runtime/specialization_key.h"
#include "../torch/dtype_map.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

uint32_t packed_dtype_of(const py::handle& obj) {
  if (!THPDtype_Check(obj.ptr())) throw py::type_error("expected a torch.dtype");
  DLDataType dl{};
  const c10::ScalarType st = reinterpret_cast<THPDtype*>(obj.ptr())->scalar_type;
  if (!to_dl_dtype(st, &dl)) {
    throw py::type_error(std::string("torch_tile cannot pass dtype ") + c10::toString(st) + " to a kernel");
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
  py::enum_<ExprOp>(m, "ExprOp", "Opcodes of plan expressions (csrc/runtime/expr.h)", py::arithmetic())
      .value("CONST", ExprOp::Const).value("SIZE", ExprOp::Size).value("STRIDE", ExprOp::Stride)
      .value("NUMEL", ExprOp::Numel).value("SCALAR", ExprOp::Scalar).value("ADD", ExprOp::Add)
      .value("SUB", ExprOp::Sub).value("MUL", ExprOp::Mul).value("FLOORDIV", ExprOp::FloorDiv)
      .value("MOD", ExprOp::Mod).value("NEG", ExprOp::Neg).value("MIN", ExprOp::Min).value("MAX", ExprOp::Max)
      .value("NEXT_POW2", ExprOp::NextPow2).value("LT", ExprOp::Lt).value("LE", ExprOp::Le)
      .value("EQ", ExprOp::Eq).value("NE", ExprOp::Ne).value("GT", ExprOp::Gt).value("GE", ExprOp::Ge)
      .value("NOT", ExprOp::Not).value("BITAND", ExprOp::BitAnd).value("BITOR", ExprOp::BitOr)
      .value("BITXOR", ExprOp::BitXor).value("SHL", ExprOp::Shl).value("SHR", ExprOp::Shr);
  py::enum_<BindingKind>(m, "BindingKind", "How a kernel parameter gets its value (csrc/runtime/launch_plan.h)", py::arithmetic())
      .value("TENSOR", BindingKind::Tensor).value("INT", BindingKind::Int).value("BOOL", BindingKind::Bool)
      .value("FLOAT", BindingKind::Float).value("CONSTEXPR", BindingKind::Constexpr)
      .value("STATIC", BindingKind::Static).value("TENSORDESC", BindingKind::TensorDesc);
  py::enum_<AllocStep::Kind>(m, "AllocKind", "Allocation steps", py::arithmetic())
      .value("EMPTY", AllocStep::Kind::Empty).value("EMPTY_LIKE", AllocStep::Kind::EmptyLike);
  py::enum_<ArgKind>(m, "ArgKind", "Kinds of op arguments", py::arithmetic())
      .value("TENSOR", ArgKind::Tensor).value("INT", ArgKind::Int).value("FLOAT", ArgKind::Float)
      .value("BOOL", ArgKind::Bool);
  // The specialization key's words (csrc/runtime/specialization_key.h), for
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
  m.def("packed_dtype", [](py::handle dtype) { return packed_dtype_of(dtype); }, py::arg("dtype"),
        "A torch.dtype as the runtime's packed DLPack dtype (the word a key carries, shifted).");
  m.def("dtype_of_packed", [](uint32_t packed) { return torch_dtype_of(packed); }, py::arg("packed"),
        "The torch.dtype of a packed DLPack dtype.");
  m.def("kernel_dtypes", [] {
        py::list dtypes;
        for (const c10::ScalarType t : kernel_scalar_types()) dtypes.append(torch_dtype_of(t));
        return dtypes;
      }, "The torch dtypes a tile kernel can take.");
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
                       bool specialize_alignment, std::optional<DescriptorBinding> desc) {
             Binding b;
             b.kind = kind;
             b.slot = slot;
             if (expr) b.expr = std::move(*expr);
             b.float_value = float_value;
             b.specialize = specialize;
             b.specialize_alignment = specialize_alignment;
             if (desc) b.desc = std::move(*desc);
             return b;
           }),
           py::arg("kind"), py::arg("slot") = -1, py::arg("expr") = py::none(), py::arg("float_value") = 0.0,
           py::arg("specialize") = true, py::arg("specialize_alignment") = true, py::arg("desc") = py::none())
      .def_readonly("kind", &Binding::kind)
      .def_readonly("slot", &Binding::slot)
      .def_property_readonly("expr", [](const Binding& b) -> std::optional<Expr> {
        return b.expr.code.empty() ? std::nullopt : std::optional<Expr>(b.expr);
      })
      .def_readonly("float_value", &Binding::float_value)
      .def_readonly("specialize", &Binding::specialize)
      .def_readonly("specialize_alignment", &Binding::specialize_alignment)
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

  py::class_<LaunchPlan>(m, "LaunchPlan", "What one traced case of an op body does: guards, then steps")
      .def(py::init([](std::vector<TensorGuard> tensor_guards, std::vector<Expr> guards, int32_t num_shape_guards,
                       std::vector<AllocStep> allocs, std::vector<LaunchStep> launches, std::vector<int32_t> outputs) {
             LaunchPlan p;
             p.tensor_guards = std::move(tensor_guards);
             p.guards = std::move(guards);
             p.num_shape_guards = num_shape_guards;
             p.allocs = std::move(allocs);
             p.launches = std::move(launches);
             p.outputs = std::move(outputs);
             return p;
           }),
           py::arg("tensor_guards"), py::arg("guards"), py::arg("num_shape_guards"), py::arg("allocs"),
           py::arg("launches"), py::arg("outputs"))
      .def_readonly("tensor_guards", &LaunchPlan::tensor_guards)
      .def_readonly("guards", &LaunchPlan::guards)
      .def_readonly("num_shape_guards", &LaunchPlan::num_shape_guards)
      .def_property_readonly("shape_guards", [](const LaunchPlan& p) {
        return std::vector<Expr>(p.guards.begin(), p.guards.begin() + p.num_shape_guards);
      })
      .def_readonly("allocs", &LaunchPlan::allocs)
      .def_readonly("launches", &LaunchPlan::launches)
      .def_readonly("outputs", &LaunchPlan::outputs)
      .def("__repr__", [](const LaunchPlan& p) {
        return "LaunchPlan(" + std::to_string(p.guards.size()) + " guards, " + std::to_string(p.allocs.size()) +
               " allocations, " + std::to_string(p.launches.size()) + " launches, outputs " +
               std::to_string(p.outputs.size()) + ")";
      })
      .def("validate", [](const LaunchPlan& p, const std::string& op, int num_args) {
        checked([&] { p.validate(op, num_args); });
      }, py::arg("op"), py::arg("num_args"), "Checks slots, ranks and expressions (ValueError naming `op`).");
}

}  // namespace

void bind_plan_format(py::module_& m) {
  bind_kinds(m);
  bind_structures(m);
}

}  // namespace torch_tile
