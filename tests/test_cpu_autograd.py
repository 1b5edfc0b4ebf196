"""CPU tests: autograd, mutation declarations, functionalization, dynamic
shapes under torch.compile and torch.export.

The op's Autograd kernel is C++: calls that need no gradient go straight to
the kernel; calls that need one run the op under a torch.autograd.Function
with the registered backward. Everything here runs without a GPU (CPU path:
Triton's interpreter; compiled graphs use the ``aot_eager`` backend).
"""

import pytest
import torch
import triton
import triton.language as tl
from torch._dynamo.testing import CompileCounterWithBackend

import torch_tile as tt
from torch_tile import TraceError
from torch_tile import kernels as K
from shared_kernels import scale_kernel

NS = "tt_cpu_autograd"


@tt.op(f"{NS}::scale")
def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha * x for a contiguous x."""
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 256),)](out, x, alpha, n, BLOCK=256)
    return out


def _scale_setup(ctx, inputs, output):
    ctx.alpha = inputs[1]


def _scale_backward(ctx, grad):
    return scale(grad.contiguous(), ctx.alpha), None


scale.register_autograd(_scale_backward, setup_context=_scale_setup)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    torch._dynamo.reset()


# -- autograd ---------------------------------------------------------------------------------------


def test_gradcheck_fp64():
    x = torch.randn(40, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: scale(t, 2.5), (x,))


def test_backward_matches_torch_and_uses_the_registered_function():
    x = torch.randn(300, requires_grad=True)
    y = scale(x, -3.0)
    assert type(y.grad_fn).__name__ == "scale_autogradBackward"
    (y * torch.arange(300.0)).sum().backward()
    torch.testing.assert_close(x.grad, -3.0 * torch.arange(300.0))


def test_no_grad_needed_gives_no_graph():
    x = torch.randn(8)
    assert scale(x, 2.0).grad_fn is None
    with torch.no_grad():
        assert scale(torch.randn(8, requires_grad=True), 2.0).grad_fn is None


def test_backward_of_op_without_one_names_the_op():
    x = torch.randn(16, requires_grad=True)
    out = torch.ops.tile.add(x, torch.randn(16))  # the forward itself is fine
    torch.testing.assert_close(out.detach(), x.detach() + (out.detach() - x.detach()))
    with pytest.raises(RuntimeError, match=r"tile::add has no backward.*register_autograd"):
        out.sum().backward()


def test_backward_returning_the_wrong_count_is_an_error():
    scale_badgrad = tt.op(f"{NS}::scale_badgrad", scale.fn)  # the same body, another op
    scale_badgrad.register_autograd(lambda ctx, g: g)  # forgets alpha's None
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"scale_badgrad: backward returned 1 gradient\(s\), expected 2"):
        scale_badgrad(x, 2.0).sum().backward()


def test_register_autograd_refuses_mutating_ops():
    with pytest.raises(RuntimeError, match=r"tile::add_.*mutates x.*functional ops only"):
        K.add_.register_autograd(lambda ctx, g: (g, g))


def test_inplace_op_bumps_the_version_counter():
    x, y = torch.randn(32), torch.randn(32)
    before = x._version
    torch.ops.tile.add_(x, y)
    assert x._version == before + 1


def test_inplace_op_on_a_saved_tensor_is_detected():
    a = torch.randn(32, requires_grad=True)
    h = a * 1.0
    z = h.sin()  # saves h for backward
    torch.ops.tile.add_(h, torch.ones(32))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_op_on_a_leaf_requiring_grad_is_refused():
    x = torch.randn(8, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch.ops.tile.add_(x, torch.randn(8))


# -- declared mutations against what the kernels write ------------------------------------------------


def test_undeclared_write_is_an_error():
    @tt.op(f"{NS}::writes_x")
    def writes_x(x: torch.Tensor, y: torch.Tensor) -> None:
        n = x.numel()
        K.add_kernel[(triton.cdiv(n, 1024),)](x, y, x, n, BLOCK=1024)

    with pytest.raises(TraceError, match=r"add_kernel\(out_ptr\) writes argument 'x'.*add it to mutates_args"):
        writes_x(torch.randn(8), torch.randn(8))


def test_a_declared_argument_a_call_does_not_write_stays_as_it_was_and_the_call_is_native():
    @tt.op(f"{NS}::claims_y", mutates_args=("y",))
    def claims_y(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        K.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out

    x, y = torch.randn(8), torch.randn(8)
    y_before = y.clone()
    assert not claims_y.trace(x, y).fallback
    fallbacks = tt.runtime_counters()["fallback_calls"]
    torch.testing.assert_close(claims_y(x, y), x + y_before, rtol=0, atol=0)
    assert torch.equal(y, y_before) and tt.runtime_counters()["fallback_calls"] == fallbacks


# -- torch.compile ------------------------------------------------------------------------------------


def test_compile_forward_and_backward_fullgraph():
    cnt = CompileCounterWithBackend("aot_eager")

    @torch.compile(backend=cnt, fullgraph=True)
    def f(x):
        return scale(x.sin(), 3.0).cos().sum()

    x = torch.randn(64, requires_grad=True)
    f(x).backward()
    ref = x.detach().clone().requires_grad_()
    (3.0 * ref.sin()).cos().sum().backward()
    torch.testing.assert_close(x.grad, ref.grad)
    assert cnt.frame_count == 1


def test_dynamic_shapes_do_not_recompile_across_launch_only_branches():
    # softmax picks num_warps by `BLOCK < 2048`: a launch option, not an output shape.
    cnt = CompileCounterWithBackend("aot_eager")

    @torch.compile(backend=cnt, fullgraph=True)
    def f(x):
        return torch.ops.tile.softmax(x * 2.0) + 1.0

    for i, n in enumerate((100, 200, 300, 1500, 3000)):
        x = torch.randn(3, n)
        if i == 0:
            torch._dynamo.mark_dynamic(x, 1)
        torch.testing.assert_close(f(x), torch.softmax(x * 2.0, -1) + 1.0)
    assert cnt.frame_count == 1


def test_automatic_dynamic_compiles_twice_at_most():
    cnt = CompileCounterWithBackend("aot_eager")

    @torch.compile(backend=cnt, fullgraph=True)
    def f(x, y):
        return torch.ops.tile.add(x, y) * 2

    for n in (16, 32, 48, 1000, 5000):
        x, y = torch.randn(n), torch.randn(n)
        torch.testing.assert_close(f(x, y), (x + y) * 2)
    assert cnt.frame_count == 2  # static, then dynamic


def test_shape_branches_still_guard():
    # A branch before an allocation that changes the output shape must guard.
    @triton.jit
    def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs < n)

    @tt.op(f"{NS}::clipped_iota")
    def clipped_iota(x: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        m = n if n < 40 else 40
        out = torch.empty((m,), dtype=torch.float32, device=x.device)
        fill_kernel[(1,)](out, m, BLOCK=64)
        return out

    cnt = CompileCounterWithBackend("aot_eager")
    f = torch.compile(clipped_iota, backend=cnt, fullgraph=True, dynamic=True)
    assert f(torch.randn(10)).shape == (10,)
    assert f(torch.randn(20)).shape == (20,)
    assert f(torch.randn(100)).shape == (40,)
    assert cnt.frame_count == 2  # one per side of `n < 40`


def test_functionalization_of_a_mutating_op():
    from torch._dynamo.backends.common import aot_autograd

    def f(x, y):
        h = x * 2
        torch.ops.tile.add_(h, y)
        return h + 1

    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm.code)
        return gm

    compiled = torch.compile(f, backend=aot_autograd(fw_compiler=record), fullgraph=True)
    x, y = torch.randn(32), torch.randn(32)
    torch.testing.assert_close(compiled(x, y), (x * 2 + y) + 1)
    (code,) = graphs
    # The mutation became a functional call (torch's auto_functionalized) of the same op.
    assert "auto_functionalized" in code and "tile.add_.default" in code


def test_export_keeps_tile_calls():
    class Block(torch.nn.Module):
        def forward(self, x):
            return torch.ops.tile.softmax(x) * 2

    ep = torch.export.export(Block(), (torch.randn(4, 32),))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert "tile.softmax.default" in targets
    x = torch.randn(4, 32)
    torch.testing.assert_close(ep.module()(x), torch.softmax(x, -1) * 2)


def test_opcheck_with_autograd():
    x = torch.randn(50, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(torch.ops.tt_cpu_autograd.scale.default, (x, 1.5))


def test_fast_apply_skips_the_python_wrapper_but_not_under_functorch():
    """Before torch 2.12 autograd.Function.apply is a Python wrapper (signature
    binding per call); tile ops call the C entry instead, except under
    functorch transforms. Simulated here by a Function whose apply is Python."""
    from torch_tile._op import _fast_apply

    calls = []

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

        @classmethod
        def apply(cls, *args):  # torch < 2.12's Python wrapper
            calls.append(args)
            return super().apply(*args)

    apply = _fast_apply(Doubled)
    x = torch.ones(3, requires_grad=True)
    apply(x).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0)) and calls == []
    grad = torch.func.grad(lambda t: apply(t).sum())(torch.ones(3))
    assert torch.equal(grad, torch.full((3,), 2.0)) and calls  # torch's own path (it may re-enter apply)
