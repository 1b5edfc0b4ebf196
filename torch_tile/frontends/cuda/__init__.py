"""CUDA C++ kernels, compiled with NVRTC (issue 15; the compile stage so far).

``CudaKernel(source, name)`` names one ``__global__`` function (a template or
not) of a CUDA C++ translation unit, given as text or as a ``.cu`` path.
``compile(template_args, capability)`` compiles the instance for
sm_<capability> with NVRTC, which the torch wheel ships (no CUDA toolkit and
no GPU needed: this machine compiles sm_90 cubins), and keeps the result in
torch_tile's disk cache, keyed by the source, the instance, the options, the
target and NVRTC's version. The torch wheel's CUDA headers (``cuda_fp16.h``,
``cuda_bf16.h``, ...) are on the include path.

Launching CUDA C++ kernels from op bodies (plan launch steps, specialization
keys, the native compile callback) is the next stage: see docs/ARCHITECTURE.md,
"Adding a frontend".
"""

from .compile import CompiledCuda, CudaKernel, cuda_include_dirs

__all__ = ["CompiledCuda", "CudaKernel", "cuda_include_dirs"]
