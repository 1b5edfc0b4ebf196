// The process's frontends (each a Compiler, by name) and its kernels (one
// KernelCache per frontend kernel, by the id the frontend gave it). A kernel
// cache compiles through its own frontend's compiler, so nothing on the launch
// path names a compiler, and there is no order to keep between registering a
// frontend and defining ops: only a kernel's registration needs its frontend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/kernels/kernel_cache.h"

namespace torch_tile {

// Registers the compiler of frontend `name` ("triton", ...); kernels registered
// from then on compile with it (registering again replaces it for later kernels).
void register_frontend(const std::string& name, std::shared_ptr<Compiler> compiler);
// Registers `compiler` only if frontend `name` has none (a bundle's stand-in
// must not replace a real compiler).
void register_frontend_if_absent(const std::string& name, std::shared_ptr<Compiler> compiler);

// The kernel cache of frontend kernel `id`, created on first use; throws if
// `frontend` is not registered, or if `id` is already a kernel of another frontend.
std::shared_ptr<KernelCache> kernel_cache_for(int64_t id, const std::string& name, const std::string& frontend);
std::shared_ptr<KernelCache> find_kernel_cache(int64_t id);

}  // namespace torch_tile
