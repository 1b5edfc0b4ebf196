"""Training through the autograd.Functions a body applies (trace/functions.py): each op's outputs and gradients
equal those of the same body run without torch_tile (the Functions applied directly, with autograd), bit for bit;
on CPU (Triton's interpreter, the Python path: forward op and gradient op) and, where there is a GPU, on CUDA
(the native path: one C++ node per call, the gradient op's plan), and the ways each takes."""

import contextlib
import dataclasses
import warnings

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile._launch_mode import launch_mode
from torch_tile._training import run_forward_op, tape_call

from shared_kernels import scale_kernel
from torch_tile.frontends.triton.interpret import InterpretLaunches

NS = "functions"
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


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
    scale_kernel[(triton.cdiv(n, 128),)](out, x, scale, n, BLOCK=128)
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


@tt.op(f"{NS}::views_of_views")
def views_of_views(x: torch.Tensor) -> torch.Tensor:
    """Views of views of a Function's output, as wrappers take them (a transpose, a slice of it, an alias of that)."""
    y = Scale.apply(x, 3.0)
    return y.transpose(0, 1)[2:].view_as(y.transpose(0, 1)[2:])


@tt.op(f"{NS}::detached_result")
def detached_result(x: torch.Tensor) -> torch.Tensor:
    """A Function applied, and none of the op's outputs depends on it as autograd sees it."""
    return Scale.apply(x, 2.0).detach()


@tt.op(f"{NS}::views_of_a_product")
def views_of_a_product(x: torch.Tensor) -> torch.Tensor:
    """Views of views of a tensor computed from a Function's output by another operation (no tape's)."""
    return (Scale.apply(x, 2.0) * x).t()[1:]


class KeepsAnAlias(torch.autograd.Function):
    """Keeps its weight converted to its own dtype (fla's LayerNormLinear does): the weight itself, in eager."""

    @staticmethod
    def forward(ctx, x, w):
        w = w.to(x.dtype)
        ctx.save_for_backward(w)
        return _mul(x, w)

    @staticmethod
    def backward(ctx, grad):
        (w,) = ctx.saved_tensors
        return _mul(grad.contiguous(), w), None


@tt.op(f"{NS}::keeps_an_alias")
def keeps_an_alias(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return KeepsAnAlias.apply(x, w)


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
    "views_of_views": (views_of_views, lambda d: (torch.randn(6, 20, device=d),)),
}


def _needing_grad(args) -> list:
    """``args`` whose floating tensors require a gradient (which Functions autograd records depends on it)."""
    return [a.detach().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args]


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


def _assert_native_as_applied_directly(op, args, device: str) -> None:
    """``op``'s outputs and gradients, with no fallback and no backward in Python (warnings are errors), equal bit
    for bit to its body's with the Functions applied directly."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outs, grads = _grads_of(op, args)
    with _directly(device):
        want_outs, want_grads = _grads_of(op.fn, args)
    for got, want in zip([*outs, *grads], [*want_outs, *want_grads]):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_equal_the_functions_applied_directly(case, device):
    op, make = CASES[case]
    args = make(device)
    _assert_native_as_applied_directly(op, args, device)
    plan = op.trace(*_needing_grad(args))
    assert plan.backward is not None and plan.backward.gradient_op, plan.backward and plan.backward.reason


@pytest.mark.parametrize("device", DEVICES)
def test_views_of_a_tensor_the_tape_cannot_differentiate_say_why(device):
    x = torch.randn(6, 5, device=device)
    spec = views_of_a_product.trace(*_needing_grad((x,))).backward
    assert not spec.gradient_op and "`aten::mul`" in spec.reason, spec.reason
    leaf = x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # said once: the body runs under autograd
        views_of_a_product(leaf).sum().backward()
    torch.testing.assert_close(leaf.grad, 4 * x * torch.ones(5, 6, device=device).t().index_fill(
        1, torch.tensor([0], device=device), 0.0))


def test_the_forward_op_keeps_what_the_tape_keeps_whoever_traces_it():
    """Its CUDA kernel traces it below autograd, where torch makes ``w.to(w.dtype)`` an alias rather than ``w``."""
    values = keeps_an_alias._values(tuple(_needing_grad((torch.randn(40), torch.randn(40)))))
    call, why = tape_call(keeps_an_alias, values)
    assert call is not None, why
    mask = sum(1 << i for i, v in enumerate(call.layout.arguments) if v is not None)
    with torch._C._AutoDispatchBelowADInplaceOrView():
        plan = keeps_an_alias.forward_op()._trace((*values, mask), True)
    assert len(plan.outputs) == 1 + call.layout.num_extras


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_that_depend_on_no_function_leave_autograd_to_decide(device):
    x = torch.randn(30, device=device)
    spec = detached_result.trace(*_needing_grad((x,))).backward
    assert not spec.gradient_op and "no output depends" in spec.reason
    leaf = x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # said once: the body runs under autograd
        out = detached_result(leaf)
    torch.testing.assert_close(out, 2 * x)
    assert not out.requires_grad


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
    plan = torch_op_between.trace(x.requires_grad_())
    assert not plan.backward.gradient_op and "aten::mul" in plan.backward.reason


@tt.op(f"{NS}::product_then_function")
def product_then_function(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return Scale.apply(a * b, 2.0)


@pytest.mark.parametrize("device", DEVICES)
def test_one_tensor_given_twice_to_a_body_under_autograd_gets_both_gradients(device):
    x = torch.randn(30, device=device)
    leaf = x.clone().requires_grad_()
    with pytest.warns(Warning, match="aten::mul"):
        product_then_function(leaf, leaf).sum().backward()
    torch.testing.assert_close(leaf.grad, 4 * x)


@pytest.mark.parametrize("device", DEVICES)
def test_a_forward_reading_needs_input_grad_has_a_plan_per_pattern(device):
    """Which arguments require a gradient is a guard (REQUIRES_GRAD): the forward reads the call's answer."""
    x = torch.randn(20, device=device)
    torch.testing.assert_close(reads_needs_input_grad(x), 3 * x)  # a plan: the call needs no gradient
    leaf = x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reads_needs_input_grad(leaf).sum().backward()
    torch.testing.assert_close(leaf.grad, torch.full_like(x, 3.0))
    guards = [g.text for g in reads_needs_input_grad.trace(leaf.detach().requires_grad_()).guards]
    assert "x.requires_grad != 0" in guards
    assert "x.requires_grad == 0" in [g.text for g in reads_needs_input_grad.trace(x).guards]


def test_the_plan_keeps_what_the_functions_keep():
    x, w = torch.randn(6, 20), torch.randn(120)
    plan = chain.trace(*_needing_grad((x, w, 1.5)))
    spec = plan.backward
    # chain_<n> where calls of other patterns (other arguments needing a gradient) came first in this process
    assert spec.gradient_op.startswith(f"{NS}_grad::chain") and not spec.materialize_grads
    assert list(spec.differentiable) == [1]
    assert len(spec.saved) == 4  # Mul's a, b twice
    layout = chain.gradient_op_named(spec.gradient_op).layout
    assert [type(n).__name__ for n in layout.nodes] == ["ViewNode", "FunctionNode", "ViewNode", "FunctionNode",
                                                        "ViewNode", "FunctionNode", "ViewNode"]
    assert list(spec.float_args) == [2]  # Scale's ctx.scale: the op's float argument, read per call


def _gradient_plan(op, args: tuple, grads: list, mask: int):
    """The plan of the gradient op a call of ``op`` on ``args`` differentiates with, traced for these output
    gradients and mask (what the native node passes it)."""
    args = tuple(_needing_grad(args))
    call, why = tape_call(op, args)
    assert call is not None, why
    with torch.no_grad():  # as the tape's autograd.Function calls it
        made = run_forward_op(op, args, call)
    outputs, extras = made[:op.num_returns], made[op.num_returns:]
    take = {"arg": args, "output": outputs, "extra": extras}
    saved = [take[kind][i] for kind, i in call.layout.sources]
    return call.gradient_op.trace(*saved, call.kept_ints(args, []), *call.kept_floats(args), *grads, mask)


def test_the_gradient_op_is_a_plan_of_the_backwards_kernels():
    plan = _gradient_plan(chain, (torch.randn(6, 20), torch.randn(120), 1.5), [torch.randn(6, 20)], 0b11)
    # Mul's backward twice (both inputs need a gradient), then Scale's; the views cost no kernel.
    assert [launch.kernel_name for launch in plan.launches] == ["_mul_kernel"] * 4 + ["scale_kernel"]
    assert not plan.fallback


class ScaledLoss(torch.autograd.Function):
    """Keeps its gradient from the forward; the backward skips scaling it when the incoming gradient is 1 (Liger's
    ``torch.equal(grad_output, torch.tensor(1.0, device=...))``: a value read from the data) and else scales it in
    place, returning what it kept."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(_scaled(x, 2.0))
        return (x * x).sum()

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = ctx.saved_tensors
        if not torch.equal(grad_output, torch.tensor(1.0, device=grad_output.device)):
            grad = _mul(grad, grad_output.expand(grad.shape).contiguous())
        return grad


@tt.op(f"{NS}::scaled_loss")
def scaled_loss(x: torch.Tensor) -> torch.Tensor:
    return ScaledLoss.apply(x)


@pytest.mark.parametrize("device", DEVICES)
def test_a_backward_that_reads_its_gradient_is_a_plan_with_a_check(device):
    x = torch.randn(100, device=device)
    for scale in (1.0, 3.0, 1.0, -2.0):
        leaf = x.clone().requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # the backward is a plan (C++ would say it runs in Python)
            (scaled_loss(leaf) * scale).backward()
        torch.testing.assert_close(leaf.grad, 2 * x * scale)
    plan = _gradient_plan(scaled_loss, (x.cpu(),), [torch.tensor(1.0)], 1)
    assert [a.name for a in plan.aten_steps][:3] == ["aten::scalar_tensor", "aten::ne", "aten::any"]
    assert len(plan.reads) == 1 and len(plan.checks) == 1 and not plan.launches


# -- a forward that writes its input (the gradient into the logits, as Liger's cross entropy does) ---------------


@triton.jit
def _cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, n_cols, stride, inv_rows, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(logits_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    target = tl.load(target_ptr + row)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=0)
    x_target = tl.sum(tl.where(cols == target, x, 0.0), axis=0)
    tl.store(loss_ptr + row, (tl.log(s) + m - x_target) * inv_rows)
    grad = (e / s - tl.where(cols == target, 1.0, 0.0)) * inv_rows
    tl.store(logits_ptr + row * stride + cols, grad, mask=mask)


@triton.jit
def _scale_rows_kernel(x_ptr, scale_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask)
    tl.store(x_ptr + row * stride + cols, x * tl.load(scale_ptr), mask=mask)


class InPlaceCrossEntropy(torch.autograd.Function):
    """The forward writes the loss' gradient into the logits (no mark_dirty) and keeps them; the backward scales
    them in place by the incoming gradient and returns them."""

    @staticmethod
    def forward(ctx, logits, target):
        rows, cols = logits.shape
        losses = torch.empty(rows, device=logits.device, dtype=torch.float32)
        _cross_entropy_kernel[(rows,)](logits, target, losses, cols, logits.stride(0), 1.0 / rows,
                                       BLOCK=triton.next_power_of_2(cols))
        ctx.save_for_backward(logits.detach())
        return losses.sum(), losses

    @staticmethod
    def backward(ctx, grad, _):
        (logits,) = ctx.saved_tensors
        rows, cols = logits.shape
        _scale_rows_kernel[(rows,)](logits, grad, cols, logits.stride(0), BLOCK=triton.next_power_of_2(cols))
        return logits, None


@tt.op(f"{NS}::in_place_cross_entropy", mutates_args=("logits",))
def in_place_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return InPlaceCrossEntropy.apply(logits, target)


def _cross_entropy_step(fn, device: str, view: bool):
    """Logits from a linear layer (or a view of a wider buffer), a loss that writes them: the gradients of the
    layer's input and weight."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(12, 16, generator=gen).to(device).requires_grad_()
    w = torch.randn(16, 40 if view else 24, generator=gen).to(device).requires_grad_()
    target = torch.randint(0, 24, (12,), generator=gen).to(device)
    logits = x @ w
    if view:
        logits = logits[:, :24]
    loss, losses = fn(logits, target)
    (loss * 2).backward()
    return loss.detach(), losses, x.grad, w.grad


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("view", [False, True], ids=["logits", "view_of_logits"])
def test_an_op_that_writes_its_input_trains_as_its_function_does(device, view):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _cross_entropy_step(in_place_cross_entropy, device, view)
    with _directly(device):
        want = _cross_entropy_step(in_place_cross_entropy.fn, device, view)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
    logits = torch.randn(6, 24, device=device)
    reference = torch.nn.functional.cross_entropy(logits, torch.arange(6, device=device))
    torch.testing.assert_close(in_place_cross_entropy(logits.clone(), torch.arange(6, device=device))[0], reference)


# -- every engine ------------------------------------------------------------------------------------------------


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(120))
        self.bias = torch.nn.Parameter(torch.randn(20))

    def forward(self, x):
        y = chain(x, self.w, 0.5)
        y = broadcasting(y, self.bias)
        return row_sum(y)[0].pow(2).mean()


def _train(model: torch.nn.Module, step, x, steps: int = 3) -> list:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = step(x)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().clone())
    return losses


@pytest.mark.parametrize("device", DEVICES)
def test_a_compiled_model_trains_with_no_graph_break(device):
    torch.manual_seed(0)
    eager, compiled = _Model().to(device), _Model().to(device)
    compiled.load_state_dict(eager.state_dict())
    x = torch.randn(6, 20, device=device)
    want = _train(eager, eager, x)
    torch._dynamo.reset()
    got = _train(compiled, torch.compile(compiled, fullgraph=True, backend="aot_eager"), x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(compiled.w, eager.w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_func_takes_the_functions_backwards(device):
    x, w = torch.randn(6, 20, device=device), torch.randn(120, device=device)
    grad = torch.func.grad(lambda x: chain(x, w, 1.5).sum())(x)
    out, vjp = torch.func.vjp(lambda x, w: chain(x, w, 1.5), x, w)
    seed = torch.randn_like(out)
    leaf_x, leaf_w = x.clone().requires_grad_(), w.clone().requires_grad_()
    with _directly(device):
        chain.fn(leaf_x, leaf_w, 1.5).backward(seed)
    gx, gw = vjp(seed)
    torch.testing.assert_close(gx, leaf_x.grad, rtol=0, atol=0)
    torch.testing.assert_close(gw, leaf_w.grad, rtol=0, atol=0)
    leaf = x.clone().requires_grad_()
    with _directly(device):
        chain.fn(leaf, w, 1.5).sum().backward()
    torch.testing.assert_close(grad, leaf.grad, rtol=0, atol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_call_on_cuda_is_one_native_node_and_its_step_runs_no_python():
    x, w = torch.randn(6, 20, device="cuda"), torch.randn(120, device="cuda", requires_grad=True)
    out = chain(x, w, 1.5)
    assert out.grad_fn.name() == f"{NS}::chainBackward"  # the C++ node, not an autograd.Function's
    out.sum().backward()  # traced and compiled
    before = tt.runtime_counters()
    for _ in range(3):
        chain(x, w, 1.5).sum().backward()
    after = tt.runtime_counters()
    assert after["host_entries"] == before["host_entries"] and after["fallback_calls"] == before["fallback_calls"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_whole_training_step_replays_from_a_cuda_graph():
    """Forward, backward (one C++ node per call: the gradient ops' plans) and the optimizer in one graph."""
    torch.manual_seed(0)
    graphed, eager = _Model().cuda(), _Model().cuda()
    eager.load_state_dict(graphed.state_dict())
    x = torch.randn(6, 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm: traced and compiled before capture (no optimizer step: the weights stay)
            graphed.zero_grad(set_to_none=True)
            graphed(x).backward()
    torch.cuda.current_stream().wait_stream(side)
    opt = torch.optim.SGD(graphed.parameters(), lr=0.01)
    opt.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = graphed(x)
        static_loss.backward()
        opt.step()
    want = _train(eager, eager, x, steps=3)
    for step_loss in want:
        graph.replay()
        torch.testing.assert_close(static_loss, step_loss, rtol=0, atol=0)
    torch.testing.assert_close(graphed.w, eager.w, rtol=0, atol=0)


# -- what the Functions' decorators and their backwards' Python do ----------------------------------------------


class Autocast(torch.autograd.Function):
    """torch.amp's decorators: the forward records whether autocast was on, the backward restores it."""

    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x, scale):
        ctx.scale = scale
        return _scaled(x, scale)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad):
        return _scaled(grad.contiguous(), ctx.scale), None


class ReadsAFloat(torch.autograd.Function):
    """A backward that reads a float from the data (`.item()`): no plan holds it, so it runs in Python."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _scaled(x, 2.0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _scaled(grad.contiguous(), 2.0 + 0.0 * x.abs().max().item())


@tt.op(f"{NS}::autocast_decorated")
def autocast_decorated(x: torch.Tensor, scale: float) -> torch.Tensor:
    return Autocast.apply(x, scale)


@tt.op(f"{NS}::backward_reads_a_float")
def backward_reads_a_float(x: torch.Tensor) -> torch.Tensor:
    return ReadsAFloat.apply(x)


@pytest.mark.parametrize("device", DEVICES)
def test_autocast_decorators_keep_their_state_on_ctx(device):
    x = torch.randn(50, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outs, grads = _grads_of(autocast_decorated, (x, 1.5))
    with _directly(device):
        want_outs, want_grads = _grads_of(autocast_decorated.fn, (x, 1.5))
    torch.testing.assert_close(grads[0], want_grads[0], rtol=0, atol=0)
    layout = autocast_decorated.gradient_op_named(
        autocast_decorated.trace(*_needing_grad((x, 1.5))).backward.gradient_op).layout
    (node,) = layout.nodes
    assert {name for name, _, _ in node.attrs} >= {"scale", "_fwd_used_autocast", "_dtype"}


@pytest.mark.parametrize("device", DEVICES)
def test_a_backward_no_plan_holds_runs_in_python_counted_and_explained(device):
    x = torch.randn(40, device=device)
    before = tt.runtime_counters()["fallback_calls"]
    explained_before = dict(backward_reads_a_float.fallback_calls)  # the op's counts of this process (all devices)
    for _ in range(2):
        leaf = x.clone().requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # said once: the backward runs in Python, and why
            backward_reads_a_float(leaf).sum().backward()
        torch.testing.assert_close(leaf.grad, torch.full_like(x, 2.0))
    assert tt.runtime_counters()["fallback_calls"] - before == 2
    (why,) = backward_reads_a_float.fallback_calls
    assert why.startswith("the backward runs in Python") and "item" in why
    assert backward_reads_a_float.fallback_calls[why] - explained_before.get(why, 0) == 2


# Libraries bind `apply` at import (`my_op = MyFunction.apply`): torch's own entry, which a trace reaches through.
_mul_applied = Mul.apply
_scale_with_setup_context = SetupContextStyle.apply


@dataclasses.dataclass
class _Config:
    scale: float
    mode: str


class WithConfig(torch.autograd.Function):
    """Keeps a config object on ctx (a library's dataclass of plain fields) and computes a float from a size."""

    @staticmethod
    def forward(ctx, x, config):
        ctx.config = config
        ctx.factor = 0.5 * (x.numel() - 1) / (x.numel() - 1)
        return _scaled(x, config.scale)

    @staticmethod
    def backward(ctx, grad):
        assert ctx.config.mode == "plain"
        return _scaled(grad.contiguous(), ctx.config.scale * ctx.factor * 2), None


_CONFIG = _Config(3.0, "plain")


_tuned_scale_kernel = triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2),
                                               triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])(scale_kernel)


class KeepsTunedConfig(torch.autograd.Function):
    """Keeps the config its autotuned forward kernel chose on ctx, and launches its backward with it (Liger's MLP)."""

    @staticmethod
    def forward(ctx, x, scale):
        out = torch.empty_like(x)
        n = x.numel()
        _tuned_scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, x, scale, n)
        ctx.config, ctx.scale = _tuned_scale_kernel.best_config, scale
        return out

    @staticmethod
    def backward(ctx, grad):
        config, out, n = ctx.config, torch.empty_like(grad), grad.numel()
        scale_kernel[(triton.cdiv(n, config.kwargs["BLOCK"]),)](out, grad.contiguous(), ctx.scale, n,
                                                               num_warps=config.num_warps, **config.kwargs)
        return out, None


@tt.op(f"{NS}::keeps_tuned_config")
def keeps_tuned_config(x: torch.Tensor, scale: float) -> torch.Tensor:
    return KeepsTunedConfig.apply(x, scale)


@pytest.mark.parametrize("device", DEVICES)
def test_a_config_an_autotuner_chose_kept_on_ctx_is_native(device):
    x = torch.randn(300, device=device)
    _assert_native_as_applied_directly(keeps_tuned_config, (x, 1.5), device)
    spec = keeps_tuned_config.trace(*_needing_grad((x, 1.5))).backward
    assert spec.gradient_op, spec.reason
    (node,) = keeps_tuned_config.gradient_op_named(spec.gradient_op).layout.nodes
    assert {name for name, _, _ in node.attrs} == {"config", "scale"}


@tt.op(f"{NS}::through_aliases")
def through_aliases(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _mul_applied(_scale_with_setup_context(a, 2.0), WithConfig.apply(b, _CONFIG))


@pytest.mark.parametrize("device", DEVICES)
def test_functions_applied_through_aliases_and_keeping_objects_are_native(device):
    a, b = torch.randn(50, device=device), torch.randn(50, device=device)
    _assert_native_as_applied_directly(through_aliases, (a, b), device)
    spec = through_aliases.trace(*_needing_grad((a, b))).backward
    layout = through_aliases.gradient_op_named(spec.gradient_op).layout
    assert [node.function.__name__ for node in layout.nodes if hasattr(node, "function")] == \
        ["SetupContextStyle", "WithConfig", "Mul"]
