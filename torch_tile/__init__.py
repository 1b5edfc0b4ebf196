"""torch_tile: tile kernels (Triton, CUDA C++ through NVRTC, cuTile) as native PyTorch operators.

``@torch_tile.op("tile::name")`` turns a Python body that allocates outputs and
launches ``@triton.jit`` kernels (or CUDA C++ / cuTile ones) into ``torch.ops.tile.name``, whose CUDA
implementation evaluates a traced launch plan, computes Triton's
specialization key, finds the compiled variant and calls ``cuLaunchKernelEx``
on the current stream, all in C++. Python runs only on a cache miss.
"""

import os

import torch  # noqa: F401  (loads libtorch before the extension)

from . import _extension  # noqa: F401  (first: a clear ImportError where the extension cannot load)
from . import _C, frontends
from ._errors import CallError, KernelError, OpDefinitionError, TraceError
from ._explain import explain
from .trace.expr import SymbolicInt, sym_max, sym_min
from ._op import TileOp, op
from .trace.stand_ins import TensorProxy
from ._version import __version__
from .bundle import export_bundle, load_bundle
from .frontends.cuda import CudaKernel
from .frontends.triton import compile_count, compile_variant

# For a LibTorch program's CMake: -DCMAKE_PREFIX_PATH=<this> makes find_package(torch_tile) work.
cmake_prefix_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "share", "cmake")

# Explicit, once: each frontend compiles its kernels' variants for the native runtime.
frontends.triton.register()
frontends.cuda.register()
frontends.cutile.register()
frontends.tilelang.register()


def runtime_counters() -> dict:
    """Slow-path counters of the C++ runtime: ``traces`` (plans traced),
    ``compiles`` (variants compiled or loaded from the disk cache),
    ``host_entries`` (times C++ called into Python: traces, compiles, and calls
    that need a gradient), ``map_lookups`` (inline-cache misses),
    ``plan_scans`` (calls served by a plan other than the first one
    tried: the op's last selected plan, or its first plan while its plans may
    overlap), ``tensor_map_encodes`` (TMA descriptors encoded: descriptor-cache misses),
    ``fallback_calls`` (calls that ran their op body in Python because no launch plan can hold what it does
    there: see ``torch_tile.explain``)."""
    return dict(_C.counters())


__all__ = [
    "op",
    "TileOp",
    "CudaKernel",
    "TraceError",
    "OpDefinitionError",
    "CallError",
    "KernelError",
    "explain",
    "TensorProxy",
    "SymbolicInt",
    "sym_min",
    "sym_max",
    "compile_count",
    "compile_variant",
    "runtime_counters",
    "export_bundle",
    "load_bundle",
    "cmake_prefix_path",
    "__version__",
]
