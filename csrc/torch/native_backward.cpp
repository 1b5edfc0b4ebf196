#include "native_backward.h"

#include <ATen/core/grad_mode.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <atomic>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>

#include "runtime/error.h"
#include "runtime/plan/evaluation_site.h"
#include "op_library.h"
#include "torch_launch_host.h"

namespace torch_tile {
namespace {

using torch::autograd::Node;
// torch 2.11's nodes are shared_ptr-owned, later ones intrusive_ptr-owned.
using NodePtr = decltype(std::declval<Node&>().getptr());

template <class T, class... A>
NodePtr make_node(A&&... args) {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<Node>>) {
    // deleteNode frees long chains of nodes without deep recursion (found by ADL, torch 2.11 only).
    return NodePtr(new T(std::forward<A>(args)...), [](auto* node) { deleteNode(node); });
  } else {
    return c10::make_intrusive<T>(std::forward<A>(args)...);
  }
}

struct GradientOp {
  std::string qualname;
  c10::OperatorHandle handle;
  std::shared_ptr<EagerGradient> eager;
  std::atomic<bool> run_eagerly{false};

  GradientOp(std::string name, c10::OperatorHandle h, std::shared_ptr<EagerGradient> e)
      : qualname(std::move(name)), handle(std::move(h)), eager(std::move(e)) {}
};

const GradientOp& gradient_of(const BackwardSpec& spec) { return *static_cast<const GradientOp*>(spec.resolved.get()); }

// Says once per name (op or gradient op) why its calls differentiate in Python.
void warn_once(const std::string& name, const std::string& message) {
  static std::mutex mutex;
  static std::set<std::string>* warned = new std::set<std::string>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned->insert(name).second) return;
  }
  TORCH_WARN(message);
}

// The autograd node of one call: what the forward saved, and the gradient op.
class TileBackward final : public Node {
 public:
  TileBackward(const std::string& forward, std::shared_ptr<const BackwardSpec> spec, size_t num_args)
      : forward_(forward), spec_(std::move(spec)), num_args_(num_args) {}

  std::string name() const override { return forward_ + "Backward"; }

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    const GradientOp& gradient = gradient_of(*spec_);
    // Under create_graph the backward itself is differentiated: its body runs eagerly, with autograd.
    const bool graph = at::GradMode::is_enabled();
    bool eager = gradient.run_eagerly.load(std::memory_order_acquire);
    torch::jit::Stack stack;
    stack.reserve(saved_.size() + 1 + floats_.size() + grads.size() + 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);  // against release_variables() of a concurrent backward
      for (const torch::autograd::SavedVariable& s : saved_) {
        at::Tensor t = s.unpack(getptr());  // refuses tensors modified in place since, or freed
        eager = eager || (graph && t.requires_grad());
        stack.emplace_back(std::move(t));
      }
    }
    stack.emplace_back(c10::List<int64_t>(ints_));  // one int[] (a schema takes at most 64 arguments)
    for (double v : floats_) stack.emplace_back(v);
    for (size_t k = 0; k < grads.size(); ++k) {
      at::Tensor& g = grads[k];
      // A non-differentiable output's zeros are the gradient op's to make, where its body reads them.
      if (!g.defined() && spec_->materialize_grads && spec_->differentiable[k]) g = input_metadata(k).zeros_like();
      eager = eager || (graph && g.defined() && g.requires_grad());
      stack.emplace_back(g.defined() ? c10::IValue(std::move(g)) : c10::IValue());
    }
    uint64_t needs_input_grad = 0;  // unsigned: bit 63 (a 64th argument) is no signed overflow
    for (size_t i = 0; i < num_args_; ++i) {
      if (task_should_compute_output(i)) needs_input_grad |= uint64_t(1) << i;
    }
    stack.emplace_back(int64_t(needs_input_grad));
    const size_t num_inputs = stack.size();
    if (!eager) {
      try {
        at::AutoDispatchBelowADInplaceOrView below;
        gradient.handle.callBoxed(stack);
      } catch (const std::exception&) {
        // A backward that cannot be traced says so (run_gradient_op_eagerly) before its trace fails.
        if (!gradient.run_eagerly.load(std::memory_order_acquire) || stack.size() != num_inputs) throw;
        eager = true;
      }
    }
    if (eager) {
      std::vector<at::Tensor> out = gradient.eager->run(gradient.handle, stack);
      return torch::autograd::variable_list(std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
    }
    torch::autograd::variable_list out;
    out.reserve(num_args_);
    for (size_t i = stack.size() - num_args_; i < stack.size(); ++i) {
      out.push_back(stack[i].isTensor() ? std::move(stack[i]).toTensor() : at::Tensor());
    }
    return out;
  }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (torch::autograd::SavedVariable& s : saved_) s.reset_data();
  }

  std::vector<torch::autograd::SavedVariable> saved_;
  std::vector<int64_t> ints_;
  std::vector<double> floats_;

 private:
  const std::string& forward_;  // the NativeOp's qualname (ops live as long as the process)
  std::shared_ptr<const BackwardSpec> spec_;
  size_t num_args_;
};

// Takes what the selected plan's BackwardSpec names, after the forward ran.
class SaveForBackward final : public PlanCallHook {
 public:
  explicit SaveForBackward(const std::string& op) : op_(op) {}

  bool selected(const LaunchPlan& plan) override {
    spec = plan.backward;
    // A plan whose calls may leave it for the body differentiates through the body's own autograd instead.
    return !plan.may_leave() && spec != nullptr && !spec->gradient_op.empty() && spec->resolved != nullptr;
  }

  void ran(const LaunchPlan& plan, const CallArgs& args, TorchLaunchHost& host) override {
    for (int32_t slot : spec->saved) {
      tensors.push_back(host.tensor(slot));
      is_output.push_back(std::find(plan.outputs.begin(), plan.outputs.end(), slot) != plan.outputs.end());
    }
    const EvalContext ctx = args.eval();
    for (size_t i = 0; i < spec->ints.size(); ++i) {
      ints.push_back(evaluate_at(spec->ints[i], ctx, op_.c_str(), [&] {
        return "int " + std::to_string(i) + " that setup_context keeps for the backward";
      }));
    }
    for (size_t i = 0; i < spec->float_args.size(); ++i) {
      const int32_t arg = spec->float_args[i];
      floats.push_back(arg >= 0 ? args.floats[arg] : spec->float_values[i]);
    }
  }

  std::shared_ptr<const BackwardSpec> spec;
  c10::SmallVector<at::Tensor, 4> tensors;
  c10::SmallVector<bool, 4> is_output;
  std::vector<int64_t> ints;
  std::vector<double> floats;

 private:
  const std::string& op_;
};

}  // namespace

void register_gradient_op(const std::string& qualname, std::shared_ptr<EagerGradient> eager) {
  OpTable<GradientOp>::instance().put(qualname,
                                      std::make_shared<GradientOp>(qualname, defined_op(qualname), std::move(eager)));
}

void run_gradient_op_eagerly(const std::string& qualname, const std::string& reason) {
  const std::shared_ptr<GradientOp> gradient = OpTable<GradientOp>::instance().find(qualname);
  if (!gradient) fail(ErrorKind::Value, qualname + " is not a gradient op");
  gradient->run_eagerly.store(true, std::memory_order_release);
  warn_once(qualname, qualname + ": the backward runs in Python: " + reason);
}

void resolve_backward(const std::string& op, LaunchPlan& plan) {
  if (!plan.backward || plan.backward->gradient_op.empty()) return;
  const std::shared_ptr<GradientOp> gradient = OpTable<GradientOp>::instance().find(plan.backward->gradient_op);
  if (!gradient) fail(ErrorKind::Value, op + ": the plan's backward names " + plan.backward->gradient_op + ", no gradient op");
  plan.backward->resolved = gradient;
}

bool call_with_native_backward(NativeOp& op, torch::jit::Stack& stack) {
  const size_t n = op.arg_kinds().size();
  const c10::IValue* in = stack.data() + stack.size() - n;
  torch::autograd::edge_list edges(n);
  for (size_t i = 0; i < n; ++i) {
    if (in[i].isTensor() && in[i].toTensor().requires_grad()) edges[i] = torch::autograd::impl::gradient_edge(in[i].toTensor());
  }
  c10::SmallVector<at::Tensor, 2> written;  // the arguments the op writes (a library's forward may write its input)
  for (int i : op.written_args()) written.push_back(in[i].toTensor());
  SaveForBackward save(op.qualname());
  bool ran;
  {
    at::AutoDispatchBelowADInplaceOrView below;
    ran = op.call(stack, &save);
  }
  if (!ran) {
    if (save.spec != nullptr && !save.spec->reason.empty()) {
      warn_once(op.qualname(), op.qualname() + ": calls that need a gradient differentiate in Python: " +
                                   save.spec->reason);
    }
    return false;
  }
  // As the op's ADInplaceOrView kernel does below autograd, before what the node saves records its version.
  for (const at::Tensor& t : written) torch::autograd::impl::bump_version(t);
  NodePtr node = make_node<TileBackward>(op.qualname(), save.spec, n);
  auto& backward = static_cast<TileBackward&>(*node);
  node->set_next_edges(std::move(edges));
  const size_t m = size_t(op.num_returns());
  for (size_t k = 0; k < m; ++k) {
    const at::Tensor& out = stack[stack.size() - m + k].toTensor();
    if (save.spec->differentiable[k] && torch::autograd::isDifferentiableType(out.scalar_type())) {
      torch::autograd::set_history(out, node);
    } else {  // no gradient flows in; its metadata makes the zeros autograd.Function would pass
      node->add_input_metadata(out);
    }
  }
  // Outputs are saved after they have their history (saved as outputs: no reference cycle).
  for (size_t i = 0; i < save.tensors.size(); ++i) backward.saved_.emplace_back(save.tensors[i], save.is_output[i]);
  backward.ints_ = std::move(save.ints);
  backward.floats_ = std::move(save.floats);
  return true;
}

}  // namespace torch_tile
