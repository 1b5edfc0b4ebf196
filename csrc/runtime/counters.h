// Process-wide counters of slow-path events, exposed to tests to prove that
// the steady state neither traces, compiles nor enters Python.
#pragma once

#include <atomic>
#include <cstdint>

namespace torch_tile {

struct Counters {
  std::atomic<uint64_t> traces{0};        // op bodies traced into plans
  std::atomic<uint64_t> compiles{0};      // kernel variants compiled
  std::atomic<uint64_t> host_entries{0};  // times the runtime called into the host language
  std::atomic<uint64_t> map_lookups{0};   // inline-cache misses served by the hash map
  std::atomic<uint64_t> plan_scans{0};    // calls served by a plan other than the first one tried (PlanSet)
  std::atomic<uint64_t> tensor_map_encodes{0};  // TMA descriptors encoded (tensor-map cache misses)
  std::atomic<uint64_t> fallback_calls{0};  // calls whose plan runs the op body in the host language
};

Counters& counters();

}  // namespace torch_tile
