// Allocating a plan output with torch's semantics, for any device's allocator.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/DispatchKeySet.h>

#include "runtime/plan/launch_plan.h"

namespace torch_tile {

// Empty: contiguous `shape`. EmptyLike: `like`'s sizes, and its strides when it
// is non-overlapping and dense (empty_like's preserve_format), else contiguous.
// Zero-filled for zeros/zeros_like.
at::Tensor allocate_output(const AllocStep& step, const int64_t* shape, int rank, const at::Tensor* like,
                           c10::Allocator* allocator, c10::DispatchKeySet keys);

// A copy of `t`, for an output that cannot be `t` itself (an argument's memory, an earlier output's): of `t`'s
// sizes and strides, gaps included, as the fake implementation makes such an output (torch.compile checks them);
// contiguous where a dimension of stride 0 repeats elements (no tensor of those strides can be written).
at::Tensor copy_of_layout(const at::Tensor& t);

}  // namespace torch_tile
