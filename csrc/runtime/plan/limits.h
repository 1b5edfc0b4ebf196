// Fixed capacities that let the launch path run without heap allocation.
#pragma once

#include <cstdint>

namespace torch_tile {

constexpr int kMaxDevices = 64;      // CUDA device ordinals served
constexpr int kMaxOpArgs = 64;       // schema arguments of one op
constexpr int kMaxSlots = 96;        // op arguments + the tensors a plan makes (allocations, views, ATen results)
constexpr int kMaxKernelParams = 120;  // parameters of one kernel
constexpr int kMaxRuntimeParams = 160;  // values passed at launch (a descriptor passes 1 + 2 * rank)
constexpr int kMaxTensorMaps = 8;       // tensor descriptors of one kernel
constexpr int kMaxPlans = 256;       // launch plans (guard sets) per op
constexpr int kMaxListItems = 256;  // items of all int[] arguments of one call
constexpr int kMaxShapeRank = 16;    // rank of an allocated output or a view
constexpr int kMaxViewDims = 2 * kMaxShapeRank * 32;  // sizes + strides of all views of one plan
constexpr int kMaxDataReads = 256;   // values one call reads from its tensors' data (Read steps)
// CUDA's grid limits, blocks in x, y, z: the same on every GPU torch_tile runs on (compute capability >= 3.0).
constexpr int64_t kMaxGrid[3] = {2147483647, 65535, 65535};

}  // namespace torch_tile
