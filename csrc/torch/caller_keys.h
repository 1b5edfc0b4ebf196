// The dispatch keys a tile op's caller had. The op's autograd kernel runs the
// call below autograd; a body run in Python for a call (a fallback plan's)
// must run as it runs outside torch_tile, with autograd (a body may take
// gradients of its own, torch.autograd.grad through a library's Function).
// The autograd kernel saves the caller's keys for the call below it; the body
// runs under them, and they are not seen by calls the body makes.
#pragma once

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <optional>

namespace torch_tile {

// Saves `caller`'s keys for this thread's calls below the scope (nests).
class CallerKeysScope {
 public:
  explicit CallerKeysScope(const c10::impl::LocalDispatchKeySet* caller);
  ~CallerKeysScope();
  CallerKeysScope(const CallerKeysScope&) = delete;
  CallerKeysScope& operator=(const CallerKeysScope&) = delete;
  // The keys saved when the scope began (nullptr: none).
  const c10::impl::LocalDispatchKeySet* previous() const { return previous_; }

 private:
  const c10::impl::LocalDispatchKeySet* previous_;
};

// For the duration of a body run per call: the caller's autograd keys where an
// autograd kernel saved them, none saved for the calls inside.
class AsTheCaller {
 public:
  AsTheCaller();
  AsTheCaller(const AsTheCaller&) = delete;
  AsTheCaller& operator=(const AsTheCaller&) = delete;

 private:
  CallerKeysScope none_{nullptr};  // built first: the keys it hides are the ones to force
  std::optional<c10::impl::ForceDispatchKeyGuard> keys_;
};

}  // namespace torch_tile
