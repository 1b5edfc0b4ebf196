"""GPU tests of native autograd: calls that need a gradient get a
C++ autograd node whose backward runs the gradient op's plan; what autograd
promises still holds (gradcheck, double backward, saved-tensor version checks,
retain_graph, hooks, anomaly mode, opcheck, torch.compile), and the
paths that cannot be native say why once and stay correct. Device machine only."""

import warnings

import pytest
import torch

import native_autograd_ops as ops
import torch_tile as tt
from conftest import requires_cuda
from torch_tile import kernels as K

pytestmark = requires_cuda


def _leaf(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype, requires_grad=True)


def _host_entries() -> int:
    return tt.runtime_counters()["host_entries"]


# Each fused op of the training example, its torch reference, and inputs.
FUSED = {
    "rms_norm": (lambda x, w: K.rms_norm(x, w, 1e-6)[0],
                 lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
                 lambda: (_leaf(64, 96), _leaf(96))),
    "softmax": (K.softmax, lambda x: torch.softmax(x, -1), lambda: (_leaf(64, 100),)),
    "swiglu": (K.swiglu, lambda g, u: torch.nn.functional.silu(g) * u, lambda: (_leaf(64, 80), _leaf(64, 80))),
    "cross_entropy": (
        lambda logits: K.cross_entropy(logits, torch.arange(64, device="cuda") % 50)[0],
        lambda logits: torch.nn.functional.cross_entropy(logits, torch.arange(64, device="cuda") % 50,
                                                         reduction="none"),
        lambda: (_leaf(64, 50),)),
    "layer_norm": (lambda x, w, b: K.layer_norm(x, w, b, 1e-5)[0],
                   lambda x, w, b: torch.nn.functional.layer_norm(x, (96,), w, b, 1e-5),
                   lambda: (_leaf(64, 96), _leaf(96), _leaf(96))),
}


@pytest.mark.parametrize("name", list(FUSED))
def test_fused_ops_get_a_native_node_and_torch_gradients(name):
    fn, reference, make = FUSED[name]
    inputs = make()
    out = fn(*inputs)
    assert out.grad_fn.name().endswith("Backward") and "tile::" in out.grad_fn.name()
    seed = torch.randn_like(out)
    got = torch.autograd.grad(out, inputs, seed)
    twins = [t.detach().clone().requires_grad_() for t in inputs]
    expected = torch.autograd.grad(reference(*twins), twins, seed)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=2e-4, rtol=2e-4)


def test_training_steps_enter_python_only_on_their_first_call():
    x, w = _leaf(64, 96), _leaf(96)
    logits = _leaf(64, 50)
    target = torch.arange(64, device="cuda") % 50

    def step():
        h = K.swiglu(K.rms_norm(x, w, 1e-6)[0], x)
        loss = K.cross_entropy(K.softmax(logits) + h[:, :50], target)[0].sum()
        loss.backward()

    step()  # traces forward and gradient plans, compiles
    before = _host_entries()
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    assert _host_entries() == before


def test_gradcheck_and_gradgradcheck_through_the_native_node():
    x = torch.randn(37, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: ops.scale(t, -1.5), (x,))
    # scale's backward is scale: under create_graph it runs eagerly, and is differentiated.
    assert torch.autograd.gradgradcheck(lambda t: ops.scale(t, -1.5), (x,))
    y = torch.randn(37, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(ops.mul, (x, y))


def test_double_backward_without_a_backward_of_the_backward_is_a_clear_error():
    x, w = _leaf(8, 32, dtype=torch.float64), _leaf(32, dtype=torch.float64)
    (gx,) = torch.autograd.grad(K.rms_norm(x, w, 1e-6)[0].sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="rms_norm_backward has no backward"):
        gx.sum().backward()


def test_needs_input_grad_skips_unneeded_gradients():
    x, y = _leaf(100), torch.randn(100, device="cuda")
    ops.mul(x, y).sum().backward()
    torch.testing.assert_close(x.grad, y)
    assert y.grad is None


def test_unused_output_gets_none_when_grads_are_not_materialized():
    x = _leaf(50)
    a, b = ops.pair(x)
    b.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 3.0))


def test_saved_tensor_modified_in_place_is_refused():
    x, y = _leaf(16), _leaf(16)
    out = ops.mul(x, y)
    with torch.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_retain_graph():
    x, y = _leaf(16), torch.randn(16, device="cuda").requires_grad_()
    out = ops.mul(x, y).sum()
    out.backward(retain_graph=True)
    out.backward()
    torch.testing.assert_close(x.grad, 2 * y.detach())
    out2 = ops.mul(x, y).sum()
    out2.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out2.backward()


def test_hooks_see_and_change_gradients():
    x = _leaf(16)
    out = ops.scale(x, 2.0)
    seen = []
    out.register_hook(lambda g: g * 10)
    out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_outputs[0].clone()))
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 20.0))
    torch.testing.assert_close(seen[0], torch.full_like(x, 10.0))


def test_anomaly_mode_names_the_node_that_made_nan():
    x = _leaf(16)
    with torch.autograd.detect_anomaly(check_nan=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ops.scale(x, float("nan"))
        with pytest.raises(RuntimeError, match=f"Function '{ops.NS}::scaleBackward' returned nan"):
            out.sum().backward()


def test_opcheck_on_cuda():
    torch.library.opcheck(ops.mul.overload, (_leaf(4, 8), _leaf(4, 8)))
    torch.library.opcheck(K.softmax.overload, (_leaf(4, 40),))


def test_torch_compile_sees_the_op_as_before():
    x = _leaf(64, 100)
    compiled = torch.compile(lambda t: K.softmax(t).pow(2).sum(), backend="aot_eager", fullgraph=True)
    compiled(x).backward()
    twin = x.detach().clone().requires_grad_()
    torch.softmax(twin, -1).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, twin.grad)


def test_untraceable_setup_context_warns_once_and_stays_correct():
    x = _leaf(20)
    with pytest.warns(UserWarning, match="reads_data_in_setup.*native_autograd_ops.py"):
        out = ops.reads_data_in_setup(x)
    assert out.grad_fn.name() == "reads_data_in_setup_autogradBackward"  # the autograd.Function
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        ops.reads_data_in_setup(x).sum().backward()


def test_untraceable_backward_runs_eagerly_after_warning_once():
    x = _leaf(20)
    out = ops.reads_data_in_backward(x)
    assert out.grad_fn.name() == f"{ops.NS}::reads_data_in_backwardBackward"
    with pytest.warns(UserWarning, match="backward runs in Python.*native_autograd_ops.py"):
        out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))
    x.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ops.reads_data_in_backward(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))


def test_non_differentiable_output_does_not_require_grad():
    _, rstd = K.rms_norm(_leaf(8, 32), _leaf(32), 1e-6)
    assert not rstd.requires_grad
