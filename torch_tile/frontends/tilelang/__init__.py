"""TileLang kernels in tile ops.

A TileLang ``JITKernel`` (from ``@tilelang.jit`` or ``tilelang.compile``) called in an op body as TileLang users
call it, ``c = kernel(a, b)``, is recorded into the op's plan (``_launch_mode`` routes ``JITKernel.__call__``
while bodies run) and launched natively on the current torch stream: its arguments bound as TileLang's executor
binds them (the PrimFunc's buffers, their dtypes, sizes and strides checked, dynamic symbols taken from the
tensors), its ``out_idx`` outputs allocated in the plan, each device kernel of TileLang's lowering a launch
(pointers, TMA descriptors encoded per call, symbols; grid, block and shared memory from the lowering). Variants
are TileLang's own compile of the lowered source (nvcc, TileLang's flags), through torch_tile's disk cache, for
the architecture the kernel was compiled for. TileLang is optional (``pip install torch_tile[tilelang]``);
a bundle's TileLang variants load and run without it.

Not supported (such a body falls back to TileLang's own executor): thread-block clusters, im2col TMA
descriptors, keyword arguments in the call.
"""

from .kernels import is_kernel, register
from .record import record_launch
from .frontend import FRONTEND

__all__ = ["FRONTEND", "is_kernel", "record_launch", "register"]
