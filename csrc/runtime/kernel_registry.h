// KernelCache objects by the id the Python frontend gave each kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../runtime/kernel_cache.h"

namespace torch_tile {

std::shared_ptr<KernelCache> kernel_cache_for(int64_t id, const std::string& name);
std::shared_ptr<KernelCache> find_kernel_cache(int64_t id);

}  // namespace torch_tile
