"""Example tile ops: importing this package registers them under ``torch.ops.tile``.

* ``tile::add``, ``tile::add_`` (in place): elementwise vector add
* ``tile::softmax``: fused row softmax (autograd registered in softmax_backward.py)
* ``tile::softmax_cuda``: the same softmax with its kernel in CUDA C++ (softmax.cu, NVRTC)
* ``tile::layer_norm``: layer-norm forward returning (out, mean, rstd) (autograd registered in layer_norm_backward.py)
* ``tile::matmul``: tiled matrix product
* ``tile::matmul_tma``: persistent bf16/fp16 matrix product through TMA tensor descriptors, autotuned

Launch attributes (sm_90+):

* ``tile::layer_norm_pdl``: layer norm in two launches chained with programmatic dependent launch
* ``tile::sum_cooperative``: sum of all elements in one cooperative launch with a grid barrier

Training kernels (forward and backward ops; the forwards have autograd):

* ``tile::rms_norm``: RMS norm over rows, returning (out, rstd)
* ``tile::rms_norm_backward``: (grad_x, grad_weight) of rms_norm, grad_weight reduced over rows
* ``tile::softmax_backward``: gradient of the row softmax from its output
* ``tile::swiglu``: silu(gate) * up, elementwise
* ``tile::swiglu_backward``: (grad_gate, grad_up) of swiglu
* ``tile::cross_entropy``: per-row cross-entropy loss and logsumexp, returning (loss, lse)
* ``tile::cross_entropy_backward``: gradient of the per-row loss with respect to the logits
* ``tile::layer_norm_backward``: (grad_x, grad_weight, grad_bias) of layer_norm

``register_sharding_rules()`` gives the training kernels and ``tile::add`` DTensor sharding rules (tensor and
sequence parallel).
"""

from .add import add, add_, add_kernel
from .cooperative_sum import sum_cooperative, sum_cooperative_kernel
from .cross_entropy import cross_entropy, cross_entropy_backward
from .layer_norm import layer_norm, layer_norm_kernel
from .layer_norm_backward import layer_norm_backward
from .matmul import matmul, matmul_kernel
from .pdl_layer_norm import layer_norm_apply_kernel, layer_norm_pdl, layer_norm_stats_kernel
from .rms_norm import rms_norm, rms_norm_backward
from .softmax import softmax, softmax_kernel
from .softmax_backward import softmax_backward
from .softmax_cuda import softmax_cuda
from .swiglu import swiglu, swiglu_backward
from .tma_matmul import matmul_tma, matmul_tma_kernel

__all__ = [
    "add", "add_", "add_kernel", "softmax", "softmax_kernel", "softmax_cuda",
    "layer_norm", "layer_norm_kernel", "matmul", "matmul_kernel",
    "rms_norm", "rms_norm_backward", "softmax_backward", "swiglu", "swiglu_backward",
    "cross_entropy", "cross_entropy_backward", "layer_norm_backward",
    "layer_norm_pdl", "layer_norm_stats_kernel", "layer_norm_apply_kernel", "sum_cooperative", "sum_cooperative_kernel",
    "matmul_tma", "matmul_tma_kernel", "register_sharding_rules",
]


def register_sharding_rules() -> None:
    """DTensor sharding rules of the elementwise and row-wise ops and their backward ops (rows may be sharded;
    weight gradients are partial sums where they are). Imports torch.distributed.tensor."""
    for op in (add, swiglu, swiglu_backward):
        op.register_sharding("elementwise")
    for op in (softmax, softmax_backward, rms_norm, layer_norm, cross_entropy, cross_entropy_backward):
        op.register_sharding("rowwise")
    rms_norm_backward.register_sharding("rowwise", partial=(1,))
    layer_norm_backward.register_sharding("rowwise", partial=(1, 2))
