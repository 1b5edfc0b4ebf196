#include "plan_constant.h"

#include "runtime/error.h"
#include "dtype_map.h"

namespace torch_tile {
namespace {

using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

}  // namespace

ConstantStep hold_constant(const at::Tensor& t, std::string site) {
  DLDataType dl{};
  if (!t.defined() || !to_dl_dtype(t.scalar_type(), &dl)) {
    fail(ErrorKind::Type, "a launch plan cannot hold this tensor (" +
                              (t.defined() ? std::string(c10::toString(t.scalar_type())) : std::string("undefined")) +
                              ")");
  }
  ConstantStep c;
  c.sizes = t.sizes().vec();
  c.strides = t.strides().vec();
  c.dtype = pack_dtype(dl);
  c.site = std::move(site);
  c.held = std::make_shared<const WeakTensor>(t.getIntrusivePtr());
  return c;
}

at::Tensor constant_tensor(const ConstantStep& step) {
  const auto* weak = static_cast<const WeakTensor*>(step.held.get());
  if (weak == nullptr) return {};
  at::Tensor t(weak->lock());
  DLDataType dl{};
  if (!t.defined() || !to_dl_dtype(t.scalar_type(), &dl) || pack_dtype(dl) != step.dtype ||
      t.sizes() != c10::IntArrayRef(step.sizes) || t.strides() != c10::IntArrayRef(step.strides)) {
    return {};
  }
  return t;
}

}  // namespace torch_tile
