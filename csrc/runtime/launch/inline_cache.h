// Monomorphic inline cache of a launch step: the last key and its variant,
// checked before the kernel's hash map on every call (see
// docs/ARCHITECTURE.md, "One call").
//
// Its memory is one key, whatever the keys a call site sees (a new key per
// size would otherwise keep one entry per size). Readers take no lock: the
// key lives in place under a sequence lock (seqlock). A writer, under a
// mutex, makes the sequence odd, writes, and makes it even again; a reader
// reads the sequence, the key's words and the variant, then the sequence
// again, and believes what it read only if the sequence was even and did not
// change. A reader that races a writer sees a miss (the kernel's hash map
// answers it), never a mix of two keys; nothing is ever freed, so no reader
// can hold memory a writer reclaims.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "runtime/launch/specialization_key.h"

namespace torch_tile {

class CompiledKernel;

class InlineCache {
 public:
  // The variant of `key` if it is the one remembered last, else nullptr.
  CompiledKernel* lookup(const SpecializationKey& key) const;
  // Remembers (key, kernel) in place of what was remembered.
  void remember(const SpecializationKey& key, CompiledKernel* kernel);
  // Keys held: 0 before the first remember, then 1.
  size_t entry_count() const;

 private:
  std::atomic<uint64_t> sequence_{0};  // odd while a writer writes
  std::atomic<uint32_t> size_{0};      // no key has 0 words: nothing is remembered yet
  std::atomic<uint64_t> words_[kMaxKernelParams + 1] = {};
  std::atomic<CompiledKernel*> kernel_{nullptr};
  std::mutex mutex_;  // writers
};

}  // namespace torch_tile
