"""SwiGLU activation, forward and backward (elementwise over contiguous tensors of any rank).

* ``tile::swiglu(gate, up) -> silu(gate) * up`` where ``silu(g) = g * sigmoid(g)``.
* ``tile::swiglu_backward(grad_out, gate, up) -> (grad_gate, grad_up)``:
  ``grad_up = grad_out * silu(gate)``,
  ``grad_gate = grad_out * up * sigmoid(gate) * (1 + gate * (1 - sigmoid(gate)))``.

All tensors share one shape and dtype and are contiguous (they are processed as
flat vectors); arithmetic is float32, float64 for float64. ``swiglu`` has autograd.
"""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import acc_dtype, check_contiguous, check_float, check_same

BLOCK = 1024


@triton.jit
def swiglu_kernel(out_ptr, gate_ptr, up_ptr, n, BLOCK: tl.constexpr, ACC: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    g = tl.load(gate_ptr + offsets, mask=mask, other=0.0).to(ACC)
    u = tl.load(up_ptr + offsets, mask=mask, other=0.0).to(ACC)
    sig = 1.0 / (1.0 + tl.exp(-g))
    tl.store(out_ptr + offsets, (g * sig * u).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_backward_kernel(grad_gate_ptr, grad_up_ptr, grad_out_ptr, gate_ptr, up_ptr, n, BLOCK: tl.constexpr,
                           ACC: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    dy = tl.load(grad_out_ptr + offsets, mask=mask, other=0.0).to(ACC)
    g = tl.load(gate_ptr + offsets, mask=mask, other=0.0).to(ACC)
    u = tl.load(up_ptr + offsets, mask=mask, other=0.0).to(ACC)
    sig = 1.0 / (1.0 + tl.exp(-g))
    silu = g * sig
    d_gate = dy * u * sig * (1.0 + g * (1.0 - sig))
    tl.store(grad_gate_ptr + offsets, d_gate.to(grad_gate_ptr.dtype.element_ty), mask=mask)
    tl.store(grad_up_ptr + offsets, (dy * silu).to(grad_up_ptr.dtype.element_ty), mask=mask)


@tt.op("tile::swiglu")
def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up for contiguous tensors of one shape and dtype."""
    op = "tile::swiglu"
    check_float(op, "gate", gate)
    check_same(op, "up", up, "gate", gate)
    check_contiguous(op, "gate", gate)
    check_contiguous(op, "up", up)
    out = torch.empty_like(gate)
    n = gate.numel()
    swiglu_kernel[(triton.cdiv(n, BLOCK),)](out, gate, up, n, BLOCK=BLOCK, ACC=acc_dtype(gate.dtype))
    return out


@tt.op("tile::swiglu_backward")
def swiglu_backward(grad_out: torch.Tensor, gate: torch.Tensor,
                    up: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(grad_gate, grad_up) of ``tile::swiglu``."""
    op = "tile::swiglu_backward"
    check_float(op, "gate", gate)
    check_same(op, "up", up, "gate", gate)
    check_same(op, "grad_out", grad_out, "gate", gate)
    check_contiguous(op, "grad_out", grad_out)
    check_contiguous(op, "gate", gate)
    check_contiguous(op, "up", up)
    grad_gate = torch.empty_like(gate)
    grad_up = torch.empty_like(up)
    n = gate.numel()
    swiglu_backward_kernel[(triton.cdiv(n, BLOCK),)](grad_gate, grad_up, grad_out, gate, up, n, BLOCK=BLOCK,
                                                     ACC=acc_dtype(gate.dtype))
    return grad_gate, grad_up


def _swiglu_setup(ctx, inputs, output):
    gate, up = inputs
    ctx.save_for_backward(gate, up)


def _swiglu_backward(ctx, grad_out):
    gate, up = ctx.saved_tensors
    # The kernels read flat vectors: an expanded or transposed incoming gradient
    # (e.g. from .sum()) is made contiguous first (a no-op when it already is).
    return swiglu_backward(grad_out.contiguous(), gate, up)


swiglu.register_autograd(_swiglu_backward, setup_context=_swiglu_setup)
