"""Example tile ops: importing this package registers them under ``torch.ops.tile``.

* ``tile::add``, ``tile::add_`` (in place): elementwise vector add
* ``tile::softmax``: fused row softmax
* ``tile::layer_norm``: layer-norm forward returning (out, mean, rstd)
* ``tile::matmul``: tiled matrix product
"""

from .add import add, add_, add_kernel
from .layer_norm import layer_norm, layer_norm_kernel
from .matmul import matmul, matmul_kernel
from .softmax import softmax, softmax_kernel

__all__ = [
    "add", "add_", "add_kernel", "softmax", "softmax_kernel",
    "layer_norm", "layer_norm_kernel", "matmul", "matmul_kernel",
]
