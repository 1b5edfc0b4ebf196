#include "key_probe.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include "runtime/plan/call_args.h"
#include "runtime/error.h"
#include "runtime/launch/plan_executor.h"
#include "../torch/dtype_map.h"
#include "../torch/error_translation.h"
#include "../torch/output_allocation.h"
#include "../torch/torch_launch_host.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

TensorArg cpu_view(const at::Tensor& t) { return view_of(t, dl_dtype_of(t)); }

// For each launch step: the key words, or None where the grid is empty.
py::list specialization_keys(const LaunchPlan& plan_in, const py::tuple& args) {
  try {
    const LaunchPlan* plan = &plan_in;
    plan->validate("key probe", int(args.size()));
    if (!plan->views.empty() || !plan->aten_steps.empty()) {
      fail(ErrorKind::NotImplemented, "the key probe takes plans of allocations and launches only");
    }
    CallArgs call;
    std::vector<at::Tensor> tensors(args.size() + plan->allocs.size());  // by slot
    call.num_args = int32_t(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const py::handle a = args[i];
      call.slots[i] = TensorArg{};
      if (THPVariable_Check(a.ptr())) {
        tensors[i] = THPVariable_Unpack(a.ptr());
        call.slots[i] = cpu_view(tensors[i]);
      } else if (py::isinstance<py::bool_>(a)) {
        call.ints[i] = a.cast<bool>();
      } else if (py::isinstance<py::int_>(a)) {
        call.ints[i] = a.cast<int64_t>();
      } else if (py::isinstance<py::float_>(a)) {
        call.floats[i] = a.cast<double>();
      }
    }
    call.num_slots = call.num_args;
    for (const AllocStep& s : plan->allocs) {
      const EvalContext ctx = call.eval();
      std::vector<int64_t> shape;
      for (const Expr& e : s.shape) shape.push_back(e.evaluate(ctx));
      const at::Tensor* like = s.kind == AllocStep::Kind::EmptyLike ? &tensors[size_t(s.like_slot)] : nullptr;
      const int slot = call.num_slots++;
      tensors[size_t(slot)] = allocate_output(s, shape.data(), int(shape.size()), like,
                                              c10::GetAllocator(c10::DeviceType::CPU),
                                              c10::DispatchKeySet(c10::DispatchKey::CPU));
      call.slots[slot] = cpu_view(tensors[size_t(slot)]);
    }
    py::list out;
    for (const LaunchStep& step : plan->launches) {
      const EvalContext ctx = call.eval();
      bool empty = false;
      for (const Expr& g : step.grid) empty = empty || g.evaluate(ctx) == 0;
      if (empty) {
        out.append(py::none());
        continue;
      }
      SpecializationKey key;
      compute_key(step, call, "key_probe", key);
      py::list words;
      for (uint32_t i = 0; i < key.size; ++i) words.append(py::int_(key.words[i]));
      out.append(words);
    }
    return out;
  } catch (const Error& e) {
    rethrow_as_torch_error(e);
  }
}

}  // namespace

void bind_key_probe(py::module_& m) {
  m.def("specialization_keys", &specialization_keys, py::arg("plan"), py::arg("args"),
        "Key words of each launch of `plan` for `args` (tensors: metadata only, any device).");
}

}  // namespace torch_tile
