#include "autograd_kernel.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/variable.h>

#include <atomic>
#include <mutex>

#include "runtime/error.h"
#include "caller_keys.h"
#include "error_translation.h"
#include "native_backward.h"
#include "native_op.h"
#include "op_library.h"

namespace torch_tile {
namespace {

// What the kernels of one op share. The differentiable path is swapped
// atomically; replaced ones stay alive for calls still using them.
struct AutogradState {
  std::string qualname;
  std::vector<int> mutated_args;
  std::atomic<DifferentiableCall*> differentiable{nullptr};
  std::shared_ptr<NativeOp> native;  // its CUDA kernel: calls on plain CUDA tensors differentiate natively
  std::atomic<bool> has_backward{false};
  std::mutex mutex;
  std::vector<std::shared_ptr<DifferentiableCall>> owned;

  void set(std::shared_ptr<DifferentiableCall> d) {
    std::lock_guard<std::mutex> lock(mutex);
    differentiable.store(d.get(), std::memory_order_release);
    owned.push_back(std::move(d));
  }
};

bool needs_grad(const c10::IValue* args, size_t n) {
  if (!at::GradMode::is_enabled()) return false;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].isTensor() && args[i].toTensor().requires_grad()) return true;
    if (args[i].isTensorList()) {  // the differentiable path refuses these with a clear error
      for (const c10::IValue& item : args[i].toListRef()) {
        if (item.toTensor().requires_grad()) return true;
      }
    }
  }
  return false;
}

// Keys under which the op's calls must see Python: tensor subclasses and
// dispatch modes, functionalization (torch.compile), functorch transforms.
c10::DispatchKeySet python_visible_keys() {
  using K = c10::DispatchKey;
  return c10::DispatchKeySet({K::Python, K::PythonTLSSnapshot, K::PythonDispatcher, K::PreDispatch, K::Functionalize,
                              K::FuncTorchBatched, K::FuncTorchGradWrapper, K::FuncTorchDynamicLayerBackMode,
                              K::FuncTorchDynamicLayerFrontMode, K::FuncTorchVmapMode, K::Batched});
}

// A call whose gradient the native node can own: CUDA tensors seen by no
// Python layer, carrying no forward-mode tangents, and no Tensor[] argument
// (whose gradients the Python path refuses with its own error).
bool plain_cuda_call(c10::DispatchKeySet keys, const c10::IValue* args, size_t n) {
  static const c10::DispatchKeySet python_visible = python_visible_keys();
  if (keys.has_any(python_visible) || keys.highestBackendKey() != c10::BackendComponent::CUDABit) return false;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].isTensorList()) return false;
    if (args[i].isTensor() && args[i].toTensor()._fw_grad(/*level=*/0).defined()) return false;
  }
  return true;
}

class AutogradKernel final : public c10::OperatorKernel {
 public:
  explicit AutogradKernel(std::shared_ptr<AutogradState> state) : state_(std::move(state)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    const size_t n = op.schema().arguments().size();
    if (!needs_grad(stack->data() + stack->size() - n, n)) {
      const c10::impl::LocalDispatchKeySet caller = c10::impl::tls_local_dispatch_key_set();
      CallerKeysScope for_a_body_run_per_call(&caller);
      at::AutoDispatchBelowAutograd below;
      op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
      return;
    }
    if (state_->has_backward.load(std::memory_order_acquire) && state_->native &&
        plain_cuda_call(keys, stack->data() + stack->size() - n, n) &&
        call_with_native_backward(*state_->native, *stack)) {
      return;
    }
    DifferentiableCall* d = state_->differentiable.load(std::memory_order_acquire);
    if (d == nullptr) fail(ErrorKind::Runtime, state_->qualname + ": no autograd path registered");
    d->call(op, *stack);
  }

 private:
  std::shared_ptr<AutogradState> state_;
};

// Bumps the version counters of the tensors a mutating op writes, as torch's
// own in-place ops do, so autograd detects a saved tensor modified later.
class InplaceKernel final : public c10::OperatorKernel {
 public:
  explicit InplaceKernel(std::shared_ptr<AutogradState> state) : state_(std::move(state)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, torch::jit::Stack* stack) {
    const size_t n = op.schema().arguments().size();
    const c10::IValue* args = stack->data() + stack->size() - n;
    c10::SmallVector<at::Tensor, 4> written;
    for (int i : state_->mutated_args) written.push_back(args[i].toTensor());
    {
      at::AutoDispatchBelowADInplaceOrView below;
      op.redispatchBoxed(keys & c10::after_ADInplaceOrView_keyset, stack);
    }
    for (const at::Tensor& t : written) torch::autograd::impl::bump_version(t);
  }

 private:
  std::shared_ptr<AutogradState> state_;
};

}  // namespace

void register_autograd_kernels(const std::string& qualname, std::vector<int> mutated_args,
                               std::shared_ptr<DifferentiableCall> differentiable) {
  auto state = std::make_shared<AutogradState>();
  state->qualname = qualname;
  state->mutated_args = std::move(mutated_args);
  state->set(std::move(differentiable));
  state->native = find_native_op(qualname);
  with_impl_library(qualname, std::nullopt, [&](torch::Library& lib, const char* name) {
    lib.impl(name, c10::DispatchKey::Autograd,
             torch::CppFunction::makeFromBoxedFunctor(std::make_unique<AutogradKernel>(state)));
    if (!state->mutated_args.empty()) {
      lib.impl(name, c10::DispatchKey::ADInplaceOrView,
               torch::CppFunction::makeFromBoxedFunctor(std::make_unique<InplaceKernel>(state)));
    }
  });
  OpTable<AutogradState>::instance().put(qualname, std::move(state));
}

void RefusedDifferentiableCall::call(const c10::OperatorHandle&, torch::jit::Stack&) {
  translating_errors([&] {
    fail(ErrorKind::NotImplemented, qualname_ + ": " + why_ + ", the op has no backward in this process; call it on "
                                                "tensors that do not require grad (or under torch::NoGradGuard)");
  });
}

void set_differentiable_call(const std::string& qualname, std::shared_ptr<DifferentiableCall> differentiable) {
  const std::shared_ptr<AutogradState> state = OpTable<AutogradState>::instance().find(qualname);
  if (!state) fail(ErrorKind::Value, qualname + " is not a registered tile op");
  state->set(std::move(differentiable));
  state->has_backward.store(true, std::memory_order_release);
}

}  // namespace torch_tile
