// A bundle: tile ops (their schemas and serialized plans) and the compiled
// variants their launches need (cubins with launch metadata, per kernel,
// specialization key and GPU architecture), in one versioned, checksummed
// file that a C++ process reads without Python. docs/ARCHITECTURE.md,
// "Bundles", describes the layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/kernels/compiled_kernel.h"
#include "runtime/plan/plan_serialization.h"

namespace torch_tile {

constexpr char kBundleMagic[8] = {'T', 'T', 'B', 'U', 'N', 'D', 'L', 'E'};
constexpr uint32_t kBundleFormatVersion = 2;  // 2: 3-D blocks; plans of format 4

// One compiled variant: what a KernelCache would compile for `key` on sm_<capability>.
struct BundledVariant {
  KernelRef kernel;
  int32_t capability = 0;     // major * 10 + minor
  std::vector<uint64_t> key;  // the SpecializationKey's words (word 0: the launch configuration)
  KernelBinary binary;
};

struct Bundle {
  std::string producer;          // versions that wrote it ("torch_tile 0.2.0; triton 3.6.0; torch 2.11.0")
  std::vector<std::string> ops;  // serialize_plans() of each op
  std::vector<BundledVariant> variants;
};

std::string serialize_bundle(const Bundle& bundle);

// Reads bytes written by serialize_bundle; a corrupt, truncated or
// other-version input, or a variant whose metadata is inconsistent, is an
// Error. The ops' plans stay serialized (deserialize_plans reads them).
Bundle deserialize_bundle(const std::string& bytes);

}  // namespace torch_tile
