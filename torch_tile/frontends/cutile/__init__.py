"""cuTile kernels (NVIDIA's ``cuda.tile``) in tile ops.

A ``@ct.kernel`` launched in an op body as cuTile users write it,
``ct.launch(stream, grid, kernel, args)``, is recorded into the op's plan
(``_launch_mode`` routes ``cuda.tile.launch`` while bodies run, as it routes
Triton's launches) and launched natively on the current torch stream. Each
array argument passes as cuTile's calling convention lays it out (its
pointer, then its shape, then its strides) and is specialised as cuTile's own
launcher specialises it: a 16-byte aligned base, disjoint elements, and per
dimension a stride that is a multiple of 16 bytes, a stride of 1, a size
divisible by 16 and a size of 1 (docs/CUTILE.md). Variants are compiled by
cuTile's own compiler (``tileiras``) from those bits, in the calling
convention cuTile would pick, through torch_tile's disk cache. cuTile is
optional (``pip install torch_tile[cutile]``): without it, a body that
launches a cuTile kernel cannot exist, and compiling says how to get it.

Not supported: tuple and list parameters, ``static_shape_dims`` and
``static_stride_dims``, ``ct.Constant`` values that depend on sizes other
than through a guard (they are specialised).
"""

from .kernels import is_kernel, register
from .record import record_launch
from .frontend import FRONTEND

__all__ = ["FRONTEND", "is_kernel", "record_launch", "register"]
