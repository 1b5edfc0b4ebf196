"""Tile ops under torch.func transforms (torch_tile/_functorch.py), on CPU (and on CUDA too where a test says so
and there is a GPU).

grad, vjp, jacrev (and their nestings: a Hessian, per-sample gradients) take the registered backward; vmap
batches with the op's vmap rule (``register_vmap``) or one call per sample; jvp names the op it cannot
differentiate; functionalize still runs the op. Every result is checked against the same math in plain torch,
and against a ``torch.library.custom_op`` with the same backward where torch supports that one (in this torch,
``torch.func`` over a custom_op's ``register_autograd`` fails upstream: its Function has no setup_context, so it
is compared through ``torch.autograd.grad`` and ``vmap``).
"""

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import kernels as K

DT = torch.float64


@triton.jit
def mul_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def sin_cos_kernel(x_ptr, sin_ptr, cos_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(sin_ptr + offs, tl.sin(x), mask=mask)
    tl.store(cos_ptr + offs, tl.cos(x), mask=mask)


@tt.op("functorch_ops::mul")
def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = x.contiguous(), y.contiguous()  # gradients arrive expanded (the gradient of a sum)
    out = torch.empty_like(x)
    n = x.numel()
    mul_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    return out


def _mul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _mul_backward(ctx, grad):
    x, y = ctx.saved_tensors
    return mul(grad, y), mul(grad, x)  # tile ops: differentiable again (a Hessian)


mul.register_autograd(_mul_backward, setup_context=_mul_setup)


@tt.op("functorch_ops::sin_cos")
def sin_cos(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.contiguous()
    s, c = torch.empty_like(x), torch.empty_like(x)
    n = x.numel()
    sin_cos_kernel[(triton.cdiv(n, 128),)](x, s, c, n, BLOCK=128)
    return s, c


def _sin_cos_setup(ctx, inputs, output):
    ctx.save_for_backward(*output)


def _sin_cos_backward(ctx, grad_sin, grad_cos):
    s, c = ctx.saved_tensors
    return mul(grad_sin, c) - mul(grad_cos, s)


sin_cos.register_autograd(_sin_cos_backward, setup_context=_sin_cos_setup)


@torch.library.custom_op("functorch_ops_reference::mul", mutates_args=())
def reference_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y


reference_mul.register_autograd(_mul_backward, setup_context=_mul_setup)


def _close(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=1e-12, atol=1e-12)


@pytest.fixture
def xy():
    torch.manual_seed(0)
    return torch.randn(5, 7, dtype=DT), torch.randn(5, 7, dtype=DT)


# -- reverse mode --------------------------------------------------------------------------------------------


def test_grad_matches_plain_torch_and_the_custom_op(xy):
    x, y = xy

    def loss(f, x, y):
        return (f(x, y) * torch.sin(x)).sum()

    grads = torch.func.grad(lambda x, y: loss(mul, x, y), argnums=(0, 1))(x, y)
    expected = torch.func.grad(lambda x, y: loss(torch.mul, x, y), argnums=(0, 1))(x, y)
    _close(grads, expected)
    # The custom_op with the same backward, through torch.autograd (torch.func refuses its Function).
    xr, yr = x.clone().requires_grad_(), y.clone().requires_grad_()
    _close(grads, torch.autograd.grad(loss(reference_mul, xr, yr), (xr, yr)))


def test_vjp_and_jacrev_match_plain_torch(xy):
    x, y = xy
    out, vjp_fn = torch.func.vjp(mul, x, y)
    _close(out, x * y)
    g = torch.randn_like(x)
    _close(vjp_fn(g), (g * y, g * x))
    _close(torch.func.jacrev(mul, argnums=1)(x[0], y[0]), torch.diag(x[0]))
    s_jac, c_jac = torch.func.jacrev(sin_cos)(x[0])
    _close(s_jac, torch.diag(torch.cos(x[0])))
    _close(c_jac, torch.diag(-torch.sin(x[0])))


def test_nested_reverse_mode_takes_the_backward_at_each_level(xy):
    x, _ = xy
    # A Hessian: the backward's own tile ops are differentiated by the outer level.
    hessian = torch.func.jacrev(torch.func.jacrev(lambda v: (mul(v, v) * v).sum()))(x[0])
    _close(hessian, torch.diag(6 * x[0]))
    grad_of_grad = torch.func.grad(lambda v: torch.func.grad(lambda u: (mul(u, u) * u).sum())(v).sum())(x[0])
    _close(grad_of_grad, 6 * x[0])


# -- vmap ----------------------------------------------------------------------------------------------------


def test_vmap_batches_like_plain_torch(xy):
    x, y = xy
    _close(torch.func.vmap(mul)(x, y), x * y)
    _close(torch.func.vmap(mul, in_dims=(1, None))(x, y[:, 0]), (x * y[:, :1]).T)
    _close(torch.func.vmap(mul, in_dims=(0, 0), out_dims=1)(x, y), (x * y).T)
    s, c = torch.func.vmap(sin_cos)(x)
    _close(s, torch.sin(x))
    _close(c, torch.cos(x))


def test_per_sample_gradients_and_gradients_of_a_batched_op(xy):
    x, y = xy
    per_sample = torch.func.vmap(torch.func.grad(lambda a, b: (mul(a, b) * a).sum()))(x, y)
    _close(per_sample, 2 * x * y)
    through_vmap = torch.func.grad(lambda a: torch.func.vmap(mul)(a, y).pow(2).sum())(x)
    _close(through_vmap, 2 * x * y * y)


def test_vmap_takes_the_registered_rule_like_the_custom_ops(xy):
    x, y = xy
    seen = []

    def rule(info, in_dims, a, b):
        seen.append((info.batch_size, in_dims))
        a = a.movedim(in_dims[0], 0) if in_dims[0] is not None else a.expand(info.batch_size, *a.shape)
        b = b.movedim(in_dims[1], 0) if in_dims[1] is not None else b.expand(info.batch_size, *b.shape)
        return torch.ops.functorch_ops_ruled.mul(a, b), 0

    @tt.op("functorch_ops_ruled::mul")
    def ruled_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return mul.fn(x, y)

    ruled_mul.register_autograd(_mul_backward, setup_context=_mul_setup)
    ruled_mul.register_vmap(rule)

    @torch.library.custom_op("functorch_ops_reference::ruled_mul", mutates_args=())
    def reference_ruled(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y

    reference_ruled.register_vmap(rule)
    batched = torch.func.vmap(ruled_mul, in_dims=(0, None))(x, y[0])
    assert seen == [(5, (0, None))]
    _close(batched, x * y[0])
    _close(batched, torch.func.vmap(reference_ruled, in_dims=(0, None))(x, y[0]))


# -- the rest of torch.func ----------------------------------------------------------------------------------


def test_forward_mode_names_the_op(xy):
    x, _ = xy
    with pytest.raises(NotImplementedError, match=r"functorch_ops::sin_cos has no forward-mode derivative"):
        torch.func.jvp(sin_cos, (x,), (torch.ones_like(x),))


def test_functionalize_runs_the_op(xy):
    x, y = xy

    def f(a, b):
        c = mul(a, b)
        c.add_(1)
        return c

    _close(torch.func.functionalize(f)(x, y), x * y + 1)


# -- ops the backward calls, ops without one ---------------------------------------------------------------------

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_first_order_transforms_take_a_backward_that_calls_ops_without_one(device):
    # tile::softmax's backward calls tile::softmax_backward, which has no backward of its own.
    x, v = torch.randn(4, 9, device=device), torch.randn(4, 9, device=device)
    loss = lambda f: lambda a: (f(a, -1) if f is torch.softmax else f(a)).mul(v).sum()  # noqa: E731
    tol = dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.func.grad(loss(K.softmax))(x), torch.func.grad(loss(torch.softmax))(x), **tol)
    out, vjp_fn = torch.func.vjp(K.softmax, x)
    torch.testing.assert_close(vjp_fn(v)[0], torch.func.vjp(lambda a: torch.softmax(a, -1), x)[1](v)[0], **tol)
    torch.testing.assert_close(torch.func.jacrev(K.softmax)(x[:2]),
                               torch.func.jacrev(lambda a: torch.softmax(a, -1))(x[:2]), **tol)


@pytest.mark.parametrize("device", DEVICES)
def test_an_op_without_a_backward_under_transforms_runs_until_it_is_differentiated(device):
    x, y = torch.randn(6, device=device), torch.randn(6, device=device)
    # Differentiated: an error naming the op, as outside transforms.
    for transform in (lambda: torch.func.vjp(K.add, x, y)[1](torch.ones_like(x)),
                      lambda: torch.func.grad(lambda a: K.add(a, y).sum())(x),
                      lambda: torch.func.jacrev(K.add)(x, y)):
        with pytest.raises(RuntimeError, match=r"tile::add has no backward"):
            transform()
    # Not differentiated (its inputs do not depend on what the transform differentiates), or batched: it runs.
    torch.testing.assert_close(torch.func.grad(lambda a: (K.add(y, y) * a).sum())(x), 2 * y)
    torch.testing.assert_close(torch.func.vmap(K.add)(x.view(2, 3), y.view(2, 3)), (x + y).view(2, 3))
