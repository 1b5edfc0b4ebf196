"""Training through the autograd.Functions a body applies (trace/functions.py): each op's outputs and gradients
equal those of the same body run without torch_tile (the Functions applied directly, with autograd), bit for bit;
on CPU (Triton's interpreter, the Python path: forward op and gradient op) and, where there is a GPU, on CUDA
(the native path: one C++ node per call, the gradient op's plan), and the ways each takes."""

import contextlib
import warnings

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile._launch_mode import launch_mode
from torch_tile._training import tape_call
from torch_tile.frontends.triton.interpret import InterpretLaunches

NS = "functions"
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


@triton.jit
def _mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * b, mask=mask)


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def _scaled(x, scale):
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 128),)](x, out, n, scale, BLOCK=128)
    return out


def _mul(a, b):
    out = torch.empty_like(a)
    n = a.numel()
    _mul_kernel[(triton.cdiv(n, 128),)](a, b, out, n, BLOCK=128)
    return out


class Scale(torch.autograd.Function):
    """Kernels both ways; a float on ctx."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return _scaled(x.contiguous(), scale)

    @staticmethod
    def backward(ctx, grad):
        return _scaled(grad.contiguous(), ctx.scale), None


class Mul(torch.autograd.Function):
    """Saves its inputs; reads needs_input_grad in its backward."""

    @staticmethod
    def forward(ctx, a, b):
        a, b = a.contiguous(), b.contiguous()
        ctx.save_for_backward(a, b)
        return _mul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad = grad.contiguous()
        return (_mul(grad, b) if ctx.needs_input_grad[0] else None,
                _mul(grad, a) if ctx.needs_input_grad[1] else None)


class RowSum(torch.autograd.Function):
    """Two outputs, one an integer (non-differentiable); sizes kept on ctx; a gradient from torch ops."""

    @staticmethod
    def forward(ctx, x):
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        _row_sum_kernel[(rows,)](x, out, cols, BLOCK=triton.next_power_of_2(cols))
        ctx.shape = (rows, cols)
        count = torch.zeros(rows, device=x.device, dtype=torch.int32)
        ctx.mark_non_differentiable(count)
        return out, count

    @staticmethod
    def backward(ctx, grad, _):
        rows, cols = ctx.shape
        return grad[:, None].expand(rows, cols).contiguous()


class Nested(torch.autograd.Function):
    """A forward that applies another Function (eager runs it without autograd: no node of its own)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return Scale.apply(x, 2.0)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _scaled(grad.contiguous(), 2.0) + 0 * x


class SetupContextStyle(torch.autograd.Function):
    @staticmethod
    def forward(x, scale):
        return _scaled(x, scale)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.scale = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return _scaled(grad.contiguous(), ctx.scale), None


class Broadcasting(torch.autograd.Function):
    """Returns a gradient for its (n,) bias with a leading dimension, and in float64: autograd sums and converts
    it to the input's sizes and dtype."""

    @staticmethod
    def forward(ctx, x, bias):
        return x + bias

    @staticmethod
    def backward(ctx, grad):
        return grad, grad.to(torch.float64)


class ReadsNeedsInputGrad(torch.autograd.Function):
    """A forward that asks which inputs need a gradient (the plan serves calls that need none too)."""

    @staticmethod
    def forward(ctx, x):
        ctx.keep = ctx.needs_input_grad[0]
        return _scaled(x, 3.0)

    @staticmethod
    def backward(ctx, grad):
        assert ctx.keep
        return _scaled(grad.contiguous(), 3.0)


class NoMaterialize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return _scaled(x, 2.0), _scaled(x, 5.0)

    @staticmethod
    def backward(ctx, g1, g2):
        total = None
        for g, s in ((g1, 2.0), (g2, 5.0)):
            if g is not None:
                part = _scaled(g.contiguous(), s)
                total = part if total is None else total + part
        return total


@tt.op(f"{NS}::chain")
def chain(x: torch.Tensor, w: torch.Tensor, scale: float) -> torch.Tensor:
    """Views around Functions, a Function's output fed to another, an input used twice."""
    y = Scale.apply(x.view(-1), scale)
    z = Mul.apply(y, w.reshape(-1))
    return Mul.apply(z, x.reshape(-1)).view(x.shape)


@tt.op(f"{NS}::row_sum")
def row_sum(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return RowSum.apply(x)


@tt.op(f"{NS}::nested")
def nested(x: torch.Tensor) -> torch.Tensor:
    return Nested.apply(x)


@tt.op(f"{NS}::setup_context_style")
def setup_context_style(x: torch.Tensor, scale: float) -> torch.Tensor:
    return SetupContextStyle.apply(x, scale)


@tt.op(f"{NS}::broadcasting")
def broadcasting(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return Broadcasting.apply(x, bias)


@tt.op(f"{NS}::half_of_two")
def half_of_two(x: torch.Tensor) -> torch.Tensor:
    return NoMaterialize.apply(x)[1]


@tt.op(f"{NS}::converted")
def converted(x: torch.Tensor) -> torch.Tensor:
    """A copy on the gradient's path (to float32 and back)."""
    return Scale.apply(x.float(), 2.0).to(x.dtype)


@tt.op(f"{NS}::reads_needs_input_grad")
def reads_needs_input_grad(x: torch.Tensor) -> torch.Tensor:
    return ReadsNeedsInputGrad.apply(x)


@tt.op(f"{NS}::torch_op_between")
def torch_op_between(x: torch.Tensor) -> torch.Tensor:
    """An operation autograd records (x * x) between Functions: the gradient's path is not only Functions."""
    return Scale.apply(x * x, 2.0)


def _directly(device: str):
    """Where the Functions, applied without torch_tile, run their kernels: the GPU, or Triton's interpreter."""
    return launch_mode(InterpretLaunches()) if device == "cpu" else contextlib.nullcontext()


CASES = {
    "chain": (chain, lambda d: (torch.randn(6, 20, device=d), torch.randn(120, device=d), 1.5)),
    "row_sum": (row_sum, lambda d: (torch.randn(7, 33, device=d),)),
    "nested": (nested, lambda d: (torch.randn(50, device=d),)),
    "setup_context_style": (setup_context_style, lambda d: (torch.randn(40, device=d), -2.0)),
    "broadcasting": (broadcasting, lambda d: (torch.randn(5, 8, device=d), torch.randn(8, device=d))),
    "half_of_two": (half_of_two, lambda d: (torch.randn(30, device=d),)),
    "converted": (converted, lambda d: (torch.randn(30, device=d, dtype=torch.float16),)),
}


def _grads_of(fn, args, seed: int = 0):
    """fn's outputs and the gradients of a weighted sum of its floating outputs w.r.t. its tensor arguments."""
    leaves = [a.clone().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
              for a in args]
    out = fn(*leaves)
    outs = out if isinstance(out, tuple) else (out,)
    gen = torch.Generator().manual_seed(seed)
    loss = sum((o.float() * torch.randn(o.shape, generator=gen).to(o.device)).sum()
               for o in outs if o.is_floating_point() and o.requires_grad)
    loss.backward()
    return [o.detach() for o in outs], [a.grad for a in leaves if isinstance(a, torch.Tensor) and a.requires_grad]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_equal_the_functions_applied_directly(case, device):
    op, make = CASES[case]
    args = make(device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no backward in Python
        outs, grads = _grads_of(op, args)
    with _directly(device):
        want_outs, want_grads = _grads_of(op.fn, args)
    for got, want in zip([*outs, *grads], [*want_outs, *want_grads]):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    plan = op.trace(*args)
    assert plan.backward is not None and plan.backward.gradient_op, plan.backward and plan.backward.reason


@pytest.mark.parametrize("device", DEVICES)
def test_only_the_inputs_that_need_a_gradient_get_one(device):
    x, w = torch.randn(4, 10, device=device), torch.randn(40, device=device)
    leaf = w.clone().requires_grad_()
    chain(x, leaf, 2.0).sum().backward()
    direct = w.clone().requires_grad_()
    with _directly(device):
        chain.fn(x, direct, 2.0).sum().backward()
    torch.testing.assert_close(leaf.grad, direct.grad, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_a_gradient_path_with_other_torch_operations_runs_the_body_under_autograd(device):
    """Not a tape: the body runs under autograd (counted, explained), its Functions' backwards as their own."""
    x = torch.randn(64, device=device)
    before = tt.runtime_counters()["fallback_calls"]
    with pytest.warns(Warning, match="aten::mul"):  # said by C++ on CUDA (the native node), by Python on CPU
        outs, grads = _grads_of(torch_op_between, (x,))
    with _directly(device):
        want_outs, want_grads = _grads_of(torch_op_between.fn, (x,))
    torch.testing.assert_close(grads[0], want_grads[0], rtol=0, atol=0)
    assert tt.runtime_counters()["fallback_calls"] > before
    assert any("under autograd" in why and "aten::mul" in why for why in tt.explain(torch_op_between).fallbacks)
    plan = torch_op_between.trace(x)
    assert not plan.backward.gradient_op and "aten::mul" in plan.backward.reason


@pytest.mark.parametrize("device", DEVICES)
def test_a_forward_reading_needs_input_grad_trains_through_the_body(device):
    x = torch.randn(20, device=device)
    torch.testing.assert_close(reads_needs_input_grad(x), 3 * x)  # a plan: the call needs no gradient
    leaf = x.clone().requires_grad_()
    with pytest.warns(Warning, match="needs_input_grad"):
        reads_needs_input_grad(leaf).sum().backward()
    torch.testing.assert_close(leaf.grad, torch.full_like(x, 3.0))


def test_the_plan_keeps_what_the_functions_keep():
    x, w = torch.randn(6, 20), torch.randn(120)
    plan = chain.trace(x, w, 1.5)
    spec = plan.backward
    assert spec.gradient_op == f"{NS}_grad::chain" and not spec.materialize_grads
    assert list(spec.differentiable) == [1]
    assert len(spec.saved) == 4  # Mul's a, b twice
    layout = chain.gradient_op_named(spec.gradient_op).layout
    assert [type(n).__name__ for n in layout.nodes] == ["ViewNode", "FunctionNode", "ViewNode", "FunctionNode",
                                                        "ViewNode", "FunctionNode", "ViewNode"]
    assert list(spec.float_args) == [2]  # Scale's ctx.scale: the op's float argument, read per call


def test_the_gradient_op_is_a_plan_of_the_backwards_kernels():
    args = (torch.randn(6, 20), torch.randn(120), 1.5)
    call, why = tape_call(chain, args)
    assert call is not None, why
    made = chain.forward_op()(*args)
    outputs, extras = made[:1], made[1:]
    take = {"arg": args, "output": outputs, "extra": extras}
    saved = [take[kind][i] for kind, i in call.layout.sources]
    plan = call.gradient_op.trace(*saved, *call.kept_ints(args, []), *call.kept_floats(args), torch.randn(6, 20),
                                  0b11)
    # Mul's backward twice (both inputs need a gradient), then Scale's; the views cost no kernel.
    assert [launch.kernel_name for launch in plan.launches] == ["_mul_kernel"] * 4 + ["_scale_kernel"]
    assert not plan.fallback
