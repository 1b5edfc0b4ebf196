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
  if (none_.previous() != nullptr) keys_.emplace(*none_.previous());
}

}  // namespace torch_tile
