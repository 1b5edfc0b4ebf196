#include "native_op.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>

#include "runtime/counters.h"
#include "runtime/cuda/device_info.h"
#include "runtime/launch/plan_executor.h"
#include "aten_step.h"
#include "autograd_kernel.h"
#include "native_backward.h"
#include "dtype_map.h"
#include "error_translation.h"
#include "op_library.h"
#include "output_allocation.h"
#include "plan_constant.h"
#include "torch_launch_host.h"
#include "written_argument_check.h"

namespace torch_tile {
namespace {

class NativeOpKernel final : public c10::OperatorKernel {
 public:
  explicit NativeOpKernel(std::shared_ptr<NativeOp> op) : op_(std::move(op)) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) {
    op_->call(*stack);
  }

 private:
  std::shared_ptr<NativeOp> op_;
};

// The Meta kernel of an op with no Python fake (NativeOp::call_meta).
class NativeMetaKernel final : public c10::OperatorKernel {
 public:
  explicit NativeMetaKernel(std::shared_ptr<NativeOp> op) : op_(std::move(op)) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) {
    op_->call_meta(*stack);
  }

 private:
  std::shared_ptr<NativeOp> op_;
};

std::string argument_name(const NativeOp& op, size_t i) { return "'" + op.arg_names()[i] + "'"; }

[[noreturn]] void bad_argument(const NativeOp& op, ErrorKind kind, size_t i, const std::string& expected,
                               const std::string& got) {
  fail(kind, op.qualname() + ": argument " + argument_name(op, i) + " expected " + expected + ", got " + got);
}

// What a schema-typed argument holds instead of the expected kind ("None", "Int"...).
std::string kind_of(const c10::IValue& v) { return v.isNone() ? "None" : std::string("a value of kind ") + v.tagKind(); }

}  // namespace

TensorArg NativeOp::read_tensor(const at::Tensor& t, size_t i, int64_t index, CallArgs& args,
                               FirstTensor& first, bool any_device) const {
  // Named 'xs[k]' for an item of a Tensor[] argument; the text is made only for a message.
  auto bad = [&](ErrorKind kind, const std::string& expected, const std::string& got) {
    const std::string item = index < 0 ? "" : "[" + std::to_string(index) + "]";
    fail(kind, qualname_ + ": argument '" + arg_names_[i] + item + "' expected " + expected + ", got " + got);
  };
  if (!t.defined()) bad(ErrorKind::Type, "a Tensor", "None (an undefined tensor)");
  if (!t.is_cuda() && !any_device) {
    bad(ErrorKind::Value, "a CUDA tensor (all tensor arguments on one device)", "a tensor on " + t.device().str());
  }
  DLDataType dl{};
  if (!to_dl_dtype(t.scalar_type(), &dl)) {
    // Named as Python names it (torch.complex64), like the Python paths' message.
    bad(ErrorKind::Type, "a dtype a launch plan can hold",
        "torch." + std::string(c10::getDtypeNames(t.scalar_type()).first));
  }
  if (first.arg < 0) {
    first.arg = int(i);
    first.device = t.device();
    args.device = t.device().index();
  } else if (t.device() != first.device) {
    bad(ErrorKind::Value, "a tensor on " + first.device.str() + " like argument " + argument_name(*this, size_t(first.arg)),
        "a tensor on " + t.device().str());
  }
  return view_of(t, dl);
}

c10::Device NativeOp::read_arguments(const c10::IValue* in, CallArgs& args, bool any_device) const {
  const NativeOp& op = *this;
  const size_t n = op.arg_kinds().size();
  args.num_args = int32_t(n);
  args.num_slots = int32_t(n);
  FirstTensor first;
  args.none_mask = 0;
  args.requires_grad_mask = 0;
  args.list_items_used = 0;
  for (size_t i = 0; i < n; ++i) {
    const c10::IValue& v = in[i];
    args.slots[i] = TensorArg{};
    ArgKind kind = op.arg_kinds()[i];
    if (is_optional(kind)) {
      if (v.isNone()) {
        args.none_mask |= uint64_t(1) << i;
        args.ints[i] = 0;
        continue;
      }
      kind = value_kind(kind);
    }
    switch (kind) {
      case ArgKind::Tensor:
        if (!v.isTensor()) bad_argument(op, ErrorKind::Type, i, "a Tensor", kind_of(v));
        args.slots[i] = read_tensor(v.toTensor(), i, -1, args, first, any_device);
        if (i < 64 && v.toTensor().requires_grad()) args.requires_grad_mask |= uint64_t(1) << i;
        break;
      case ArgKind::TensorList: {
        if (!v.isTensorList()) bad_argument(op, ErrorKind::Type, i, "a list of Tensors", kind_of(v));
        const c10::ArrayRef<c10::IValue> items = v.toListRef();
        if (args.num_slots + int64_t(items.size()) > kMaxSlots) {
          bad_argument(op, ErrorKind::Value, i, "at most " + std::to_string(kMaxSlots - n) + " tensors in lists",
                       std::to_string(items.size()) + " tensors");
        }
        // Items take the slots after the arguments; list_start/list_len say which.
        args.list_start[i] = args.num_slots;
        args.list_len[i] = int32_t(items.size());
        for (size_t k = 0; k < items.size(); ++k) {
          args.slots[args.num_slots++] =
              read_tensor(items[k].toTensor(), i, int64_t(k), args, first, any_device);
        }
        break;
      }
      case ArgKind::Int:
        if (!v.isInt()) bad_argument(op, ErrorKind::Type, i, "an int", kind_of(v));
        args.ints[i] = v.toInt();
        break;
      case ArgKind::Bool:
        if (!v.isBool()) bad_argument(op, ErrorKind::Type, i, "a bool", kind_of(v));
        args.ints[i] = v.toBool() ? 1 : 0;
        break;
      case ArgKind::Float:
        if (!v.isDouble()) bad_argument(op, ErrorKind::Type, i, "a float", kind_of(v));
        args.floats[i] = v.toDouble();
        break;
      case ArgKind::String: {
        if (!v.isString()) bad_argument(op, ErrorKind::Type, i, "a str", kind_of(v));
        const std::string& str = v.toStringRef();  // the stack's string outlives the call
        args.strings[i] = StrArg{str.data(), str.size()};
        break;
      }
      case ArgKind::IntList: {
        if (!v.isIntList()) bad_argument(op, ErrorKind::Type, i, "a list of ints", kind_of(v));
        const c10::ArrayRef<c10::IValue> items = v.toListRef();
        if (args.list_items_used + int64_t(items.size()) > kMaxListItems) {
          bad_argument(op, ErrorKind::Value, i, "at most " + std::to_string(kMaxListItems) + " list items in all",
                       std::to_string(items.size()) + " items");
        }
        args.list_start[i] = args.list_items_used;
        args.list_len[i] = int32_t(items.size());
        for (const c10::IValue& item : items) args.list_items[args.list_items_used++] = item.toInt();
        break;
      }
      case ArgKind::Dtype:
        if (!v.isInt()) bad_argument(op, ErrorKind::Type, i, "a torch.dtype", kind_of(v));
        args.ints[i] = v.toInt();  // its ScalarType code
        break;
      default: bad_argument(op, ErrorKind::Type, i, "a supported argument kind", kind_of(v));
    }
  }
  if (first.arg < 0) {
    fail(ErrorKind::Value, op.qualname() + ": the CUDA implementation needs at least one tensor argument");
  }
  return first.device;
}

NativeOp::NativeOp(std::string qualname, std::string schema, std::vector<ArgKind> arg_kinds, int num_returns,
                   std::shared_ptr<PlanTracer> tracer, bool gradient_op)
    : qualname_(std::move(qualname)), arg_kinds_(std::move(arg_kinds)), schema_(std::move(schema)),
      num_returns_(num_returns), gradient_op_(gradient_op), tracer_(std::move(tracer)) {
  if (arg_kinds_.size() > size_t(kMaxOpArgs)) {
    fail(ErrorKind::NotImplemented, qualname_ + ": more than " + std::to_string(kMaxOpArgs) + " arguments");
  }
  const c10::FunctionSchema& defined = defined_op(qualname_).schema();
  if (defined.arguments().size() != arg_kinds_.size()) {
    fail(ErrorKind::Runtime, qualname_ + ": the argument kinds do not match the schema's arguments");
  }
  const std::vector<c10::Argument>& returns = defined.returns();
  returns_list_ = returns.size() == 1 && returns[0].type()->isSubtypeOf(*c10::ListType::ofTensors());
  for (size_t i = 0; i < defined.arguments().size(); ++i) {
    const c10::Argument& a = defined.arguments()[i];
    arg_names_.push_back(a.name());
    if (a.alias_info() != nullptr && a.alias_info()->isWrite()) written_args_.push_back(int(i));
  }
  for (const c10::Argument& r : returns) {  // validated in Python (TileOp) before the op was defined
    int arg = -1;
    for (size_t i = 0; r.alias_info() != nullptr && i < defined.arguments().size(); ++i) {
      const c10::AliasInfo* a = defined.arguments()[i].alias_info();
      if (a != nullptr && a->isWrite() && a->beforeSets() == r.alias_info()->beforeSets()) arg = int(i);
    }
    returned_args_.push_back(arg);
  }
}

const LaunchPlan& NativeOp::plan_for(const CallArgs& args, const torch::jit::Stack& stack, size_t first,
                                     bool may_fall_back) {
  if (const LaunchPlan* p = plans_.select(args)) return *p;
  // Slow path: trace the body once for this case, even if threads race here.
  std::lock_guard<ForkSafeMutex> lock(plans_.trace_mutex());
  if (const LaunchPlan* p = plans_.select(args)) return *p;
  if (plans_.full() && may_fall_back && !gradient_op_) {
    // No room for another plan: such calls run the body (warned once), as an untraceable body's do.
    if (beyond_full_ == nullptr) {
      auto fallback = std::make_unique<LaunchPlan>();
      fallback->fallback = "the op keeps " + std::to_string(kMaxPlans) +
                           " launch plans, the most one op keeps, and none serves this call: its guards take too "
                           "many cases (sizes the body branches on, or values guarded one by one, such as an int "
                           "argument used in float arithmetic: `beta ** step`)";
      beyond_full_ = std::move(fallback);
    }
    return *beyond_full_;
  }
  // A gradient op's calls may leave a plan whose data checks fail for its body (run eagerly), never fall back.
  std::unique_ptr<LaunchPlan> plan = tracer_->trace(*this, args, stack, first, may_fall_back);
  if ((plan->is_fallback() && !(may_fall_back && !gradient_op_)) || (plan->may_leave() && !may_fall_back)) {
    fail(ErrorKind::Runtime, qualname_ + ": the tracer returned a plan that may run the op body where none may (" +
                                 (plan->is_fallback() ? plan->fallback : "a data check") + ")");
  }
  counters().traces.fetch_add(1, std::memory_order_relaxed);
  plan->validate(qualname_, int(arg_kinds_.size()));
  resolve_aten_steps(qualname_, *plan);
  resolve_backward(qualname_, *plan);
  check_signature(*plan);
  if (!plan_matches(*plan, args)) {
    fail(ErrorKind::Runtime, qualname_ + ": the traced plan's guards do not hold for the call that traced it");
  }
  return *plans_.add(std::move(plan));
}

namespace {

// Why a call runs without the plan whose tensor it could not take.
std::string constant_not_taken(const ConstantChanged& e) {
  return e.elsewhere() ? "the plan holds the tensor the body uses at " + e.step().site + " on another device"
                       : "the tensor the body uses at " + e.step().site + " changed again as it was traced";
}

}  // namespace

const LaunchPlan& NativeOp::plan_holding(const CallArgs& args, const torch::jit::Stack& stack, size_t first,
                                         TorchLaunchHost& host, bool may_fall_back) {
  const LaunchPlan& plan = plan_for(args, stack, first, may_fall_back);
  if (plan.constants.empty()) return plan;
  try {
    host.take_constants(plan.constants);
    return plan;
  } catch (const ConstantChanged& e) {
    if (e.elsewhere()) throw;  // the tensor is as traced, on another device: this plan does not serve the call
    plans_.clear();  // the body may reach other tensors now: every case traces again
  }
  const LaunchPlan& retraced = plan_for(args, stack, first, may_fall_back);
  host.take_constants(retraced.constants);  // ConstantChanged again: the caller's
  return retraced;
}

bool NativeOp::call(torch::jit::Stack& stack, PlanCallHook* hook) {
  const size_t n = arg_kinds_.size();
  const size_t first = stack.size() - n;
  const c10::IValue* in = stack.data() + first;
  LaunchObserver* const observer = launch_observer();  // none in production: one branch per phase
  try {
    CallArgs args;
    const c10::Device device = read_arguments(in, args);
    if (!written_args_.empty()) check_written_arguments(qualname_, arg_names_, written_args_, in);
    if (observer != nullptr) observer->phase(CallPhase::ArgumentsRead);
    // Switch devices only when needed: the guard costs runtime calls on every call.
    c10::OptionalDeviceGuard device_guard;
    if (current_context_device() != args.device) device_guard.reset_device(device);
    if (observer != nullptr) observer->phase(CallPhase::DeviceSet);
    TorchLaunchHost host(args, in, device);
    const LaunchPlan* selected = nullptr;
    try {
      selected = &plan_holding(args, stack, first, host);
    } catch (const ConstantChanged& e) {
      if (hook != nullptr) return false;  // not natively: the hook's caller takes the body's path
      counters().fallback_calls.fetch_add(1, std::memory_order_relaxed);
      tracer_->run_fallback(*this, constant_not_taken(e), stack, n);
      return true;
    }
    const LaunchPlan& plan = *selected;
    if (observer != nullptr) observer->phase(CallPhase::PlanSelected);
    if (hook != nullptr && !hook->selected(plan)) return false;
    if (plan.is_fallback()) {
      counters().fallback_calls.fetch_add(1, std::memory_order_relaxed);
      tracer_->run_fallback(*this, plan.fallback, stack, n);
      return true;
    }
    try {
      run_plan(plan, args, host, qualname_.c_str(), observer);
    } catch (const CheckNotHeld& e) {
      // What the plan made so far is dropped with the host; the arguments are as they came.
      counters().fallback_calls.fetch_add(1, std::memory_order_relaxed);
      tracer_->run_fallback(*this, "the value read from the data `" + e.step().condition.text + "` (at " +
                                       e.step().site + ") differs from the traced call's", stack, n);
      return true;
    }
    if (hook != nullptr) hook->ran(plan, args, host);
    push_outputs(plan, host, stack, n);
    if (observer != nullptr) observer->phase(CallPhase::OutputsPushed);
  } catch (const Error& e) {
    rethrow_as_torch_error(e);
  } catch (c10::Error& e) {  // torch's own (the allocator's, an ATen step's): its type kept, the op named
    e.add_context("in torch_tile op " + qualname_);
    throw;
  }
  return true;
}

void NativeOp::own_outputs(std::vector<at::Tensor>& outputs, const c10::IValue* in) const {
  // Pointer compares on storages, as TorchLaunchHost::aliases_input decides for a plan's outputs.
  c10::SmallVector<const c10::StorageImpl*, 8> inputs;
  const auto add = [&](const c10::IValue& v) {
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().has_storage()) {
      inputs.push_back(v.toTensor().storage().unsafeGetStorageImpl());
    }
  };
  for (size_t i = 0; i < arg_kinds_.size(); ++i) {
    if (in[i].isList()) {
      for (const c10::IValue& item : in[i].toListRef()) add(item);
    } else {
      add(in[i]);
    }
  }
  c10::SmallVector<size_t, 8> copied;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const at::Tensor& t = outputs[k];
    if (!t.defined()) continue;
    const int declared = returns_list_ || k >= returned_args_.size() ? -1 : returned_args_[k];
    if (declared >= 0 && in[declared].isTensor() && in[declared].toTensor().is_same(t)) continue;
    const bool of_an_input = t.has_storage() && std::find(inputs.begin(), inputs.end(),
                                                          t.storage().unsafeGetStorageImpl()) != inputs.end();
    bool repeated = false;  // an earlier output's memory
    for (size_t j = 0; j < k && !repeated; ++j) {
      repeated = outputs[j].is_same(t) || (outputs[j].defined() && t.has_storage() && outputs[j].has_storage() &&
                                           outputs[j].storage().is_alias_of(t.storage()));
    }
    if (of_an_input || repeated) copied.push_back(k);
  }
  for (size_t k : copied) outputs[k] = copy_of_layout(outputs[k]);
}

void NativeOp::push_outputs(const LaunchPlan& plan, TorchLaunchHost& host, torch::jit::Stack& stack, size_t n) {
  // A body may return an argument, a view of one, one tensor twice or two views of one tensor (as it may in
  // eager): unless the schema declares that return the argument itself (`Tensor(a!)`), it declares a new tensor
  // whose memory is its own (torch.compile's buffers assume it), so such an output is a copy of that tensor, of
  // its layout. A gradient op's outputs are the tensors themselves (a gradient passed through, one gradient for
  // two inputs) or None (-1). Each leaves the host before the arguments leave the stack. A view reads its base,
  // which take() moves out, so views become tensors first; only a made tensor returned once is moved.
  if (!plan.views.empty()) {
    for (int32_t slot : plan.outputs) {
      if (slot >= 0) host.tensor(slot);
    }
  }
  c10::SmallVector<at::Tensor, 8> outputs;
  const int first_made = plan.first_made(int(arg_kinds_.size()));
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    const int32_t slot = plan.outputs[k];
    const bool again = std::find(plan.outputs.begin() + k + 1, plan.outputs.end(), slot) != plan.outputs.end();
    const int memory = slot < 0 ? -1 : host.memory_of(slot);
    bool before = false;  // an earlier output has this output's memory
    for (size_t j = 0; j < k && !before && slot >= 0; ++j) {
      before = plan.outputs[j] >= 0 && host.memory_of(plan.outputs[j]) == memory;
    }
    const bool declared = k < returned_args_.size() && returned_args_[k] == slot;  // the argument itself, by schema
    if (slot < 0) {
      outputs.emplace_back();
    } else if (!gradient_op_ && !declared && (before || host.aliases_input(slot))) {
      outputs.push_back(copy_of_layout(host.tensor(slot)));
    } else {
      outputs.push_back((slot < first_made || again) ? host.tensor(slot) : host.take(slot));
    }
  }
  torch::jit::drop(stack, n);
  if (returns_list_) {
    torch::jit::push(stack, c10::List<at::Tensor>(std::vector<at::Tensor>(outputs.begin(), outputs.end())));
  } else {
    for (at::Tensor& t : outputs) torch::jit::push(stack, std::move(t));
  }
}

namespace {

// Keeps the keys of a dry run.
class CollectedKeys final : public KeySink {
 public:
  void key(const LaunchStep& step, const SpecializationKey& key) override {
    keys.emplace_back(step.kernel, std::vector<uint64_t>(key.words, key.words + key.size));
  }
  std::vector<std::pair<std::shared_ptr<KernelCache>, std::vector<uint64_t>>> keys;
};

// A dry run whose keys nobody needs (the Meta implementation).
class IgnoredKeys final : public KeySink {
 public:
  void key(const LaunchStep&, const SpecializationKey&) override {}
};

// A meta tensor of `t`'s concrete layout: symbolic sizes, strides and offset are guarded on their values.
at::Tensor specialised_meta(const at::Tensor& t) {
  std::vector<int64_t> sizes, strides;
  for (const c10::SymInt& s : t.sym_sizes()) sizes.push_back(s.guard_int(__FILE__, __LINE__));
  for (const c10::SymInt& s : t.sym_strides()) strides.push_back(s.guard_int(__FILE__, __LINE__));
  const int64_t offset = t.sym_storage_offset().guard_int(__FILE__, __LINE__);
  int64_t extent = 1;  // elements the view reaches, from its offset
  for (size_t d = 0; d < sizes.size(); ++d) extent += (sizes[d] - 1) * strides[d];
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) extent = 0;
  const at::Tensor storage = at::empty({offset + extent}, t.options().device(c10::kMeta));
  return storage.as_strided(sizes, strides, offset);
}

}  // namespace

template <class Ran>
void NativeOp::dry_run(const torch::jit::Stack& stack, KeySink& keys, Ran ran) {
  const size_t first = stack.size() - arg_kinds_.size();
  const c10::IValue* in = stack.data() + first;
  CallArgs args;
  const c10::Device device = read_arguments(in, args, /*any_device=*/true);
  c10::OptionalDeviceGuard device_guard;  // the plan's allocations and ATen steps go to the arguments' device
  if (device.is_cuda()) device_guard.reset_device(device);
  TorchLaunchHost host(args, in, device);
  const LaunchPlan* selected = nullptr;
  try {
    selected = &plan_holding(args, stack, first, host, /*may_fall_back=*/false);
  } catch (const ConstantChanged& e) {
    fail(ErrorKind::Runtime, qualname_ + ": " + constant_not_taken(e));
  }
  const LaunchPlan& plan = *selected;
  if (plan.is_fallback()) {
    fail(ErrorKind::NotImplemented, qualname_ + ": this call runs the op body (" + plan.fallback +
                                        "), so it has no launch plan to dry-run");
  }
  run_plan(plan, args, host, qualname_.c_str(), nullptr, &keys);
  ran(plan, host, device);
}

void NativeOp::call_meta(torch::jit::Stack& stack) {
  const size_t n = arg_kinds_.size();
  const size_t first = stack.size() - n;
  try {
    for (size_t i = first; i < stack.size(); ++i) {
      c10::IValue& v = stack[i];
      if (v.isTensor() && v.toTensor().unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
        v = specialised_meta(v.toTensor());
      } else if (v.isSymInt()) {
        v = v.toSymInt().guard_int(__FILE__, __LINE__);
      } else if (v.isList()) {
        c10::List<c10::IValue> items = v.toList();
        bool symbolic = false;
        for (const c10::IValue& item : items) symbolic = symbolic || item.isSymInt();
        if (symbolic) {
          std::vector<int64_t> values;
          for (const c10::IValue& item : items) {
            values.push_back(item.isSymInt() ? item.toSymInt().guard_int(__FILE__, __LINE__) : item.toInt());
          }
          v = c10::IValue(values);
        }
      }
    }
    IgnoredKeys ignored;
    dry_run(stack, ignored, [&](const LaunchPlan& plan, TorchLaunchHost& host, c10::Device device) {
      if (!device.is_meta()) {
        fail(ErrorKind::Value, qualname_ + ": the Meta implementation got tensors on " + device.str());
      }
      push_outputs(plan, host, stack, n);
    });
  } catch (const Error& e) {
    rethrow_as_torch_error(e);
  }
}

std::vector<std::pair<std::shared_ptr<KernelCache>, std::vector<uint64_t>>> NativeOp::variant_keys(
    const torch::jit::Stack& stack) {
  if (stack.size() < arg_kinds_.size()) fail(ErrorKind::Value, qualname_ + ": variant_keys needs the op's arguments");
  CollectedKeys collected;
  try {
    dry_run(stack, collected, [](const LaunchPlan&, TorchLaunchHost&, c10::Device) {});
  } catch (const Error& e) {
    rethrow_as_torch_error(e);
  }
  return std::move(collected.keys);
}

void NativeOp::check_signature(const LaunchPlan& plan) const {
  plan.check_argument_kinds(qualname_, arg_kinds_);
  if (!returns_list_ && !plan.is_fallback() && int(plan.outputs.size()) != num_returns_) {
    fail(ErrorKind::Value, qualname_ + ": a plan returns " + std::to_string(plan.outputs.size()) +
                               " tensors; the schema declares " + std::to_string(num_returns_));
  }
  // Each Tensor[] argument's length must be guarded (`len(xs) == n`), and the lengths must add up to the
  // plan's list slots: otherwise a call with the same total but other lists would read the wrong tensors.
  int64_t listed = 0;
  for (size_t i = 0; i < arg_kinds_.size(); ++i) {
    if (arg_kinds_[i] != ArgKind::TensorList) continue;
    bool guarded = false;
    for (const Expr& g : plan.guards) {
      const std::vector<int64_t>& c = g.code;
      if (c.size() == 5 && c[0] == int64_t(ExprOp::ListLen) && c[1] == int64_t(i) && c[2] == int64_t(ExprOp::Const) &&
          c[4] == int64_t(ExprOp::Eq) && c[3] >= 0) {
        listed += c[3];
        guarded = true;
        break;
      }
    }
    if (!guarded) {
      fail(ErrorKind::Value, qualname_ + ": a plan does not guard the length of list argument '" + arg_names_[i] + "'");
    }
  }
  if (listed != plan.num_list_tensors) {
    fail(ErrorKind::Value, qualname_ + ": a plan's list lengths add up to " + std::to_string(listed) + " tensors, not " +
                               std::to_string(plan.num_list_tensors));
  }
  for (const TensorGuard& g : plan.tensor_guards) {
    if (g.arg >= plan.first_made(int(arg_kinds_.size()))) {
      fail(ErrorKind::Value, qualname_ + ": a plan guards tensor slot " + std::to_string(g.arg) + ", which no input holds");
    }
  }
  if (!gradient_op_) {  // outputs may be arguments (as the body returned them); only a gradient's may be None
    for (int32_t slot : plan.outputs) {
      if (slot < 0) fail(ErrorKind::Value, qualname_ + ": a plan returns None");
    }
  }
}

OpPlans NativeOp::export_plans() const {
  OpPlans out;
  out.qualname = qualname_;
  out.schema = schema_;
  out.arg_kinds = arg_kinds_;
  out.num_returns = num_returns_;
  for (int i = 0; i < plans_.size(); ++i) {
    if (!plans_.at(i).is_fallback()) out.plans.push_back(plans_.at(i));  // the body stays with its process
  }
  return out;
}

void PlanTracer::run_fallback(NativeOp& op, const std::string& reason, torch::jit::Stack&, size_t) {
  fail(ErrorKind::Runtime, op.qualname() + ": this call runs the op body (" + reason + "), which this process "
                                           "cannot do (the body is Python's)");
}

int NativeOp::install_plans(const OpPlans& in) {
  auto refuse = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
    fail(ErrorKind::Value, qualname_ + ": cannot install plans of " + what + " " + theirs + " (this op: " + ours + ")");
  };
  if (in.qualname != qualname_) refuse("op", in.qualname, qualname_);
  if (in.schema != schema_) refuse("schema", in.schema, schema_);
  if (in.arg_kinds != arg_kinds_ || in.num_returns != num_returns_) refuse("signature", in.schema, schema_);
  for (const LaunchPlan& p : in.plans) {
    p.validate(qualname_, int(arg_kinds_.size()));
    check_signature(p);
  }
  std::lock_guard<ForkSafeMutex> lock(plans_.trace_mutex());
  for (const LaunchPlan& p : in.plans) {
    auto plan = std::make_unique<LaunchPlan>(p);
    resolve_aten_steps(qualname_, *plan);
    plans_.add(std::move(plan));
  }
  return int(in.plans.size());
}

void register_native_op(std::shared_ptr<NativeOp> op, const std::string& dispatch_key) {
  with_impl_library(op->qualname(), c10::parseDispatchKey(dispatch_key), [&](torch::Library& lib, const char* name) {
    lib.impl(name, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<NativeOpKernel>(op)));
  });
  OpTable<NativeOp>::instance().put(op->qualname(), op);
}

std::shared_ptr<NativeOp> define_native_op(const std::string& qualname, const std::string& signature,
                                           std::vector<ArgKind> arg_kinds, int num_returns,
                                           std::shared_ptr<PlanTracer> tracer, const std::string& no_backward) {
  const OpName name = split_op_name(qualname);
  new_library(torch::Library::FRAGMENT, name.ns, std::nullopt).def((name.name + signature).c_str());
  auto op = std::make_shared<NativeOp>(qualname, signature, std::move(arg_kinds), num_returns, std::move(tracer));
  register_native_op(op, "CUDA");
  register_autograd_kernels(qualname, op->written_args(),
                            std::make_shared<RefusedDifferentiableCall>(qualname, no_backward));
  return op;
}

void register_native_meta(std::shared_ptr<NativeOp> op) {
  with_impl_library(op->qualname(), c10::DispatchKey::Meta, [&](torch::Library& lib, const char* name) {
    lib.impl(name, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<NativeMetaKernel>(op)));
  });
}

std::shared_ptr<NativeOp> find_native_op(const std::string& qualname) { return OpTable<NativeOp>::instance().find(qualname); }

}  // namespace torch_tile
