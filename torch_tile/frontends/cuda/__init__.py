"""CUDA C++ kernels in tile ops, compiled with NVRTC.

``CudaKernel(source, name)`` names one ``__global__`` function (a template or
not) of a CUDA C++ translation unit, given as text or as a ``.cu`` path. In an
op body, ``kernel[grid, block](*args, template_args=(...))`` is recorded into
the op's plan like a Triton launch (tensors pass as pointers, ints and floats
as the kernel declares them) and launched natively. Variants compile on demand
with NVRTC, which the torch wheel ships (no CUDA toolkit; no GPU needed to
compile: this machine makes sm_90 cubins), into torch_tile's disk cache, keyed
by the source, the instance, the options, the target and NVRTC's version. The
torch wheel's CUDA headers (``cuda_fp16.h``, ``cuda_bf16.h``...) are on the
include path.

Blocks have 1 to 3 dimensions (``kernel[grid, (16, 16)]``). A kernel built
with ``specialize=True`` sees Triton's specialization bits as macros
(``TT_ALIGNED16_<i>``, ``TT_EQ1_<i>``, ``TT_DIV16_<i>``); with
``specialize="cutile"``, cuTile's bits of each tensor's layout
(``TT_STRIDE16B_<i>_<d>``, ``TT_SIZE1_<i>_<d>``...; see ``CudaKernel``).

Not yet: the CPU debug path (CUDA C++ has no interpreter), and the write analysis (the op's
``mutates_args`` is trusted for CUDA C++ launches).
"""

from .compile import CompiledCuda, CudaKernel, cuda_include_dirs
from .kernels import register
from .record import ctype
from .frontend import FRONTEND

__all__ = ["FRONTEND", "CompiledCuda", "CudaKernel", "ctype", "cuda_include_dirs", "register"]
