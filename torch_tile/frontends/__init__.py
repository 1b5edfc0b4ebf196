"""Frontends: where kernels come from. Each turns its kernels into plan launch
steps while a body is traced, and compiles a kernel variant from its
specialization key when the native runtime asks (registered with
``_C.register_frontend``): ``triton`` (``@triton.jit`` kernels), ``cuda``
(CUDA C++ compiled with NVRTC), ``cutile`` (cuTile kernels) and ``tilelang``
(TileLang's compiled kernels). ``frontend.py`` is the interface they implement
and their registry."""

# The frontends, each registering itself (its Frontend object) on import; asked in this order. Their shared
# helpers live in modules of their own (kernel_registry.py, launch_metadata.py, launch_record.py).
from . import cuda, cutile, tilelang, triton  # noqa: F401
