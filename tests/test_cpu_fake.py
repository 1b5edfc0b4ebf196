"""CPU tests: fake/meta tensors, torch.compile and torch.library.opcheck.

The fake (Meta) implementation traces the op's body on the call's size hints
and evaluates the plan's output shapes on the (possibly symbolic) sizes; that
is what lets torch.compile see the output shapes without a graph break.
Everything here runs on a machine without a GPU: compiled graphs use the
``aot_eager`` backend, whose eager execution calls the CPU path.
"""

import pytest
import torch
import triton
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

import torch_tile as tt
from torch_tile import kernels  # registers torch.ops.tile.*

from conftest import requires_interpreter_scalar_loops


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# -- fake tensors and meta tensors ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fake_mode_shapes_and_dtypes(dtype):
    with FakeTensorMode():
        x = torch.empty(6, 3000, dtype=dtype)
        y = torch.empty(6, 3000, dtype=dtype)
        w = torch.empty(3000, dtype=dtype)
        b = torch.empty(3000, dtype=dtype)
        a = torch.empty(6, 40, dtype=dtype)
        c = torch.empty(40, 9, dtype=dtype)

        s = torch.ops.tile.add(x, y)
        assert isinstance(s, FakeTensor)
        assert s.shape == (6, 3000) and s.dtype == dtype and s.stride() == x.stride()

        sm = torch.ops.tile.softmax(x)
        assert sm.shape == (6, 3000) and sm.dtype == dtype

        out, mean, rstd = torch.ops.tile.layer_norm(x, w, b)
        assert out.shape == (6, 3000) and out.dtype == dtype
        assert mean.shape == (6,) and rstd.shape == (6,)
        assert mean.dtype == rstd.dtype == torch.float32

        mm = torch.ops.tile.matmul(a, c)
        assert mm.shape == (6, 9) and mm.dtype == dtype

        assert torch.ops.tile.add_(x, y) is None


def test_fake_mode_runs_the_body_checks():
    """The body's own argument checks run on fake tensors too."""
    with FakeTensorMode():
        with pytest.raises(ValueError, match="same shape"):
            torch.ops.tile.add(torch.empty(4), torch.empty(5))
        with pytest.raises(ValueError, match="cannot be multiplied"):
            torch.ops.tile.matmul(torch.empty(3, 4), torch.empty(5, 6))


def test_fake_mode_does_not_launch():
    """bf16 is refused by the CPU interpreter; on fake tensors no launch happens, so bf16 is fine."""
    with FakeTensorMode():
        x = torch.empty(2, 8, dtype=torch.bfloat16)
        assert torch.ops.tile.softmax(x).dtype == torch.bfloat16


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_meta_tensors(dtype):
    x = torch.empty(5, 7, device="meta", dtype=dtype)
    out = torch.ops.tile.softmax(x)
    assert out.device.type == "meta" and out.shape == (5, 7) and out.dtype == dtype

    s = torch.ops.tile.add(x, x)
    assert s.device.type == "meta" and s.shape == (5, 7)

    mm = torch.ops.tile.matmul(torch.empty(3, 5, device="meta", dtype=dtype),
                               torch.empty(5, 11, device="meta", dtype=dtype))
    assert mm.device.type == "meta" and mm.shape == (3, 11) and mm.dtype == dtype

    o, m, r = torch.ops.tile.layer_norm(x, torch.empty(7, device="meta", dtype=dtype),
                                        torch.empty(7, device="meta", dtype=dtype))
    assert (o.shape, m.shape, r.shape) == ((5, 7), (5,), (5,))
    assert o.device.type == m.device.type == r.device.type == "meta"


# -- torch.compile ---------------------------------------------------------------------------------


def _mixed(x, y, w, b):
    z = torch.ops.tile.add(x, y) * 2
    s = torch.ops.tile.softmax(z - z.mean())
    o, mean, rstd = torch.ops.tile.layer_norm(s + 1, w, b)
    m = torch.ops.tile.matmul(o, o.t().contiguous())
    return torch.relu(m).sum(0) + mean.mean() + rstd.max()


@requires_interpreter_scalar_loops
def test_compile_fullgraph_mixed_ops():
    """fullgraph=True fails on any graph break: tile ops must be traceable by Dynamo."""
    torch._dynamo.reset()
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    w, b = torch.randn(16), torch.randn(16)
    compiled = torch.compile(_mixed, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x, y, w, b), _mixed(x, y, w, b), atol=1e-4, rtol=1e-4)


def test_compile_graph_contains_tile_ops():
    """The ops appear in the captured graph as single nodes (opaque custom ops, not inlined)."""
    torch._dynamo.reset()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def fn(x, y):
        return torch.ops.tile.softmax(torch.ops.tile.add(x, y)).sum()

    x, y = torch.randn(3, 8), torch.randn(3, 8)
    result = torch.compile(fn, fullgraph=True, backend=backend)(x, y)
    torch.testing.assert_close(result, fn(x, y))
    assert len(graphs) == 1
    targets = [n.target for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert sum(t in (torch.ops.tile.add, torch.ops.tile.add.default) for t in targets) == 1
    assert sum(t in (torch.ops.tile.softmax, torch.ops.tile.softmax.default) for t in targets) == 1


def test_compile_dynamic_shapes():
    """With dynamic=True the fake impl runs on SymInts (including the softmax num_warps branch)."""
    torch._dynamo.reset()

    def fn(x):
        return torch.ops.tile.softmax(x * 2) + 1

    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager", dynamic=True)
    for n_cols in (5, 7, 100, 3000):
        x = torch.randn(3, n_cols)
        torch.testing.assert_close(compiled(x), fn(x))


def test_compile_inplace_op():
    """add_ mutates its first argument; functionalization must keep that visible after compile."""
    torch._dynamo.reset()

    def fn(x, y):
        torch.ops.tile.add_(x, y)
        return x * 2

    x, y = torch.randn(50), torch.randn(50)
    x_eager, x_compiled = x.clone(), x.clone()
    expected = fn(x_eager, y)
    got = torch.compile(fn, fullgraph=True, backend="aot_eager")(x_compiled, y)
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(x_compiled, x_eager)
    torch.testing.assert_close(x_compiled, x + y)


# -- opcheck ---------------------------------------------------------------------------------------

# Every example op, with inputs requiring grad where the op has a backward, so
# that "test_autograd_registration" and the AOT-dispatch checks go through the
# op's Autograd kernel and its registered backward. The other utilities check
# the schema (mutation/aliasing against the real CPU kernel) and the fake impl
# against the real kernel, with static and dynamic shapes. No GPU needed.
OPCHECK_UTILS = (
    "test_schema",
    "test_autograd_registration",
    "test_faketensor",
    "test_aot_dispatch_static",
    "test_aot_dispatch_dynamic",
)


def _grad(t):
    return t.clone().requires_grad_()


def _opcheck_cases():
    x, y = torch.randn(4, 16), torch.randn(4, 16)
    w, b = torch.randn(16), torch.randn(16)
    rstd = torch.rand(4) + 0.5
    target = torch.tensor([0, 3, 15, 7])
    loops = requires_interpreter_scalar_loops  # kernels that loop to a runtime bound
    return [
        pytest.param(torch.ops.tile.add.default, (x, y), id="add"),
        pytest.param(torch.ops.tile.add_.default, (x.clone(), y), id="add_"),
        pytest.param(torch.ops.tile.softmax.default, (_grad(x),), id="softmax"),
        pytest.param(torch.ops.tile.softmax.default, (_grad(torch.randn(2, 3000)),), id="softmax_large"),
        pytest.param(torch.ops.tile.softmax_backward.default, (y, torch.softmax(x, -1)), id="softmax_backward"),
        pytest.param(torch.ops.tile.layer_norm.default, (_grad(x), _grad(w), _grad(b), 1e-5), id="layer_norm",
                     marks=loops),
        pytest.param(torch.ops.tile.layer_norm_backward.default, (y, x, w, x.mean(1), rstd), id="layer_norm_backward",
                     marks=loops),
        pytest.param(torch.ops.tile.rms_norm.default, (_grad(x), _grad(w), 1e-6), id="rms_norm", marks=loops),
        pytest.param(torch.ops.tile.rms_norm_backward.default, (y, x, w, rstd), id="rms_norm_backward", marks=loops),
        pytest.param(torch.ops.tile.swiglu.default, (_grad(x), _grad(y)), id="swiglu"),
        pytest.param(torch.ops.tile.swiglu_backward.default, (y, x, y * 2), id="swiglu_backward"),
        pytest.param(torch.ops.tile.cross_entropy.default, (_grad(x), target), id="cross_entropy", marks=loops),
        pytest.param(torch.ops.tile.cross_entropy_backward.default, (torch.rand(4), x, target, rstd),
                     id="cross_entropy_backward", marks=loops),
        pytest.param(torch.ops.tile.matmul.default, (x, torch.randn(16, 8)), id="matmul", marks=loops),
    ]


@pytest.mark.parametrize("op, args", _opcheck_cases())
def test_opcheck(op, args):
    torch.library.opcheck(op, args, test_utils=OPCHECK_UTILS)


@tt.op("tile_test_fake::doubled_cuda")
def doubled_cuda(x: torch.Tensor) -> torch.Tensor:
    """A body that names its device ("cuda") instead of taking x.device."""
    out = torch.empty(x.shape[0] * 2, device="cuda")
    n = x.numel()
    kernels.add_kernel[(triton.cdiv(n, 1024),)](x, x, out, n, BLOCK=1024)
    return out


def test_fake_cuda_tensors_keep_their_device_in_the_body():
    # The fake implementation traces meta stand-ins, but the body sees the tensors' real device.
    with FakeTensorMode():
        y = torch.ops.tile_test_fake.doubled_cuda(torch.empty(7, device="cuda"))
    assert y.shape == (14,) and y.device.type == "cuda"
