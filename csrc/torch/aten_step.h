// A plan's ATen steps: resolved to dispatcher operators once, when a plan is
// installed, and replayed per call from C++ on the current stream.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <functional>

#include "runtime/plan/call_args.h"
#include "runtime/plan/launch_plan.h"

namespace torch_tile {

// Finds each ATen step's operator (a Value error naming `op` and the operator
// when this process's torch has none of that name).
void resolve_aten_steps(const std::string& op, LaunchPlan& plan);

// Calls `step`'s operator with its arguments evaluated for this call; the
// tensors it returns (step.num_outputs of them) go to `results`.
void run_aten_step(const AtenStep& step, const CallArgs& args,
                   const std::function<const at::Tensor&(int)>& tensor_of, c10::Device device,
                   c10::SmallVector<at::Tensor, 2>& results);

}  // namespace torch_tile
