// Launch plans as bytes: an op's signature and all its plans, with the
// kernels they name, written so that another process (C++ with no Python,
// through a bundle) can read them back. Versioned and checksummed; a corrupt,
// truncated or other-version input is refused with an Error, never half read.
// The layout is documented field by field in docs/ARCHITECTURE.md
// ("Serialized plans").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/plan/launch_plan.h"

namespace torch_tile {

constexpr char kPlanMagic[8] = {'T', 'T', 'P', 'L', 'A', 'N', 'S', '\0'};
// 2: views, ATen steps, step order, optional/str/dtype arguments; 3: Tensor[] arguments; 4: layout-specialised
// tensor bindings; 5: Read and Check steps (values read from the data); 6: RequiresGrad in expressions
constexpr uint32_t kPlanFormatVersion = 6;

// What a launch step names of its kernel: enough to find the kernel cache
// again in a process that registered the same kernel (the Triton frontend
// derives ids from the kernel's source hash, so they agree across processes).
struct KernelRef {
  int64_t id = 0;
  std::string name;
  std::string frontend;
};

// An op's signature and plans, as serialized.
struct OpPlans {
  std::string qualname;  // "ns::name"
  std::string schema;    // "(Tensor x, Tensor y) -> Tensor"
  std::vector<ArgKind> arg_kinds;
  int32_t num_returns = 0;
  std::vector<LaunchPlan> plans;
};

std::string serialize_plans(const OpPlans& op);

// Reads bytes written by serialize_plans. `resolve` turns each kernel
// reference into this process's kernel cache (or throws naming the kernel);
// every plan is validated before it is returned.
OpPlans deserialize_plans(const std::string& bytes,
                          const std::function<std::shared_ptr<KernelCache>(const KernelRef&)>& resolve);

}  // namespace torch_tile
