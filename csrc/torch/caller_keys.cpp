#include "caller_keys.h"

namespace torch_tile {
namespace {

thread_local const c10::impl::LocalDispatchKeySet* saved_caller_keys = nullptr;

}  // namespace

CallerKeysScope::CallerKeysScope(const c10::impl::LocalDispatchKeySet* caller) : previous_(saved_caller_keys) {
  saved_caller_keys = caller;
}

CallerKeysScope::~CallerKeysScope() { saved_caller_keys = previous_; }

AsTheCaller::AsTheCaller() {
  const c10::impl::LocalDispatchKeySet* caller = none_.previous();
  if (caller == nullptr) return;
  // Autograd's keys as the caller had them; every other key as it is now. A dispatch mode's Python keys in
  // particular: the mode that handles this call is off its stack while it runs the call (make_fx running the op
  // on real tensors), and forcing its keys back would dispatch to no mode.
  const c10::DispatchKeySet autograd = c10::autograd_dispatch_keyset_with_ADInplaceOrView;
  const c10::impl::LocalDispatchKeySet now = c10::impl::tls_local_dispatch_key_set();
  keys_.emplace((now.included_ - autograd) | (caller->included_ & autograd),
                (now.excluded_ - autograd) | (caller->excluded_ & autograd));
}

}  // namespace torch_tile
