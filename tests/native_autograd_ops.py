"""Ops for the native-autograd tests: each exercises one thing a
``setup_context``/``backward`` pair may do. Shared by test_cpu_native_autograd.py
(traces, gradient ops, the eager bodies) and test_gpu_native_autograd.py (the
C++ node)."""

import torch
import triton
import triton.language as tl

import torch_tile as tt

NS = "tt_native_ag"


@triton.jit
def _scale_kernel(out_ptr, x_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@triton.jit
def _mul_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * tl.load(y_ptr + offs, mask=mask), mask=mask)


@tt.op(f"{NS}::scale")
def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha * x (x contiguous): its backward is itself, so it differentiates twice."""
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 256),)](out, x, alpha, n, BLOCK=256)
    return out


def _scale_setup(ctx, inputs, output):
    ctx.alpha = inputs[1]  # a float argument: read per call


scale.register_autograd(lambda ctx, grad: (scale(grad.contiguous(), ctx.alpha), None), setup_context=_scale_setup)


@tt.op(f"{NS}::mul")
def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x * y for contiguous tensors of one shape."""
    out = torch.empty_like(x)
    n = x.numel()
    _mul_kernel[(triton.cdiv(n, 256),)](out, x, y, n, BLOCK=256)
    return out


def _mul_setup(ctx, inputs, output):
    x, y = inputs
    ctx.save_for_backward(x, y)
    ctx.shape = tuple(x.shape)  # sizes: expressions evaluated per call
    ctx.label = "mul"           # a constant


def _mul_backward(ctx, grad):
    x, y = ctx.saved_tensors
    assert tuple(grad.shape) == ctx.shape and ctx.label == "mul"
    grad = grad.contiguous()
    # Only what is needed: a guard on the mask bit read.
    return (mul(grad, y) if ctx.needs_input_grad[0] else None,
            mul(grad, x) if ctx.needs_input_grad[1] else None)


mul.register_autograd(_mul_backward, setup_context=_mul_setup)


@tt.op(f"{NS}::scale_by")
def scale_by(x: torch.Tensor, k: int) -> torch.Tensor:
    """k * x by ATen alone, with an int argument kept for the backward (an ATen step too)."""
    return x * k


def _scale_by_setup(ctx, inputs, output):
    ctx.k = inputs[1]


scale_by.register_autograd(lambda ctx, grad: (grad * ctx.k, None), setup_context=_scale_by_setup)


@tt.op(f"{NS}::pair")
def pair(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(2x, 3x): a backward that gets None for an unused output (no materialized zeros)."""
    return scale(x, 2.0), scale(x, 3.0)


def _pair_setup(ctx, inputs, output):
    ctx.set_materialize_grads(False)


def _pair_backward(ctx, grad_a, grad_b):
    if grad_a is None:
        return scale(grad_b.contiguous(), 3.0)
    if grad_b is None:
        return scale(grad_a.contiguous(), 2.0)
    return scale(grad_a.contiguous(), 2.0) + scale(grad_b.contiguous(), 3.0)


pair.register_autograd(_pair_backward, setup_context=_pair_setup)


@tt.op(f"{NS}::reads_data_in_setup")
def reads_data_in_setup(x: torch.Tensor) -> torch.Tensor:
    """2x; its setup_context reads a value from the data (no plan can hold that)."""
    return scale(x, 2.0)


def _reads_data_setup(ctx, inputs, output):
    ctx.total = float(inputs[0].sum().item())


reads_data_in_setup.register_autograd(lambda ctx, grad: scale(grad.contiguous(), 2.0), setup_context=_reads_data_setup)


@tt.op(f"{NS}::reads_data_in_backward")
def reads_data_in_backward(x: torch.Tensor) -> torch.Tensor:
    """2x; its backward reads a value from the data (it runs eagerly)."""
    return scale(x, 2.0)


def _reads_data_backward(ctx, grad):
    factor = 2.0 if grad.abs().max().item() >= 0 else 0.0
    return scale(grad.contiguous(), factor)


reads_data_in_backward.register_autograd(_reads_data_backward)


@tt.op(f"{NS}::with_stat")
def with_stat(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(2x, a statistic of x's shape marked non-differentiable, which the backward still reads)."""
    return scale(x, 2.0), scale(x, 0.5)


def _with_stat_setup(ctx, inputs, output):
    ctx.mark_non_differentiable(output[1])


with_stat.register_autograd(lambda ctx, grad, grad_stat: scale(grad.contiguous(), 2.0) + grad_stat,
                            setup_context=_with_stat_setup)


@tt.op(f"{NS}::keeps_an_object")
def keeps_an_object(x: torch.Tensor) -> torch.Tensor:
    """2x; its setup_context computes a tensor, then keeps an object no plan can hold."""
    return scale(x, 2.0)


def _keeps_an_object_setup(ctx, inputs, output):
    ctx.doubled = inputs[0] * 2  # an ATen step in the trace
    ctx.handle = object()


keeps_an_object.register_autograd(lambda ctx, grad: scale(grad.contiguous(), 2.0),
                                  setup_context=_keeps_an_object_setup)
