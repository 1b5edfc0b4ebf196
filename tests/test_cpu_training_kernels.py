"""CPU tests: the training kernels (forward and backward ops) through Triton's interpreter.

Each op is compared with a pure-torch reference: forwards with the formula,
backward ops with torch autograd of the formula. The Python backward functions
are called directly with a namespace as ``ctx``; autograd through the ops
(``TileOp.register_autograd``) and ``torch.autograd.gradcheck`` in float64 run
where the method exists. Sizes stay small: the interpreter is slow.
"""

import importlib
import types

import pytest
import torch
import torch.nn.functional as F

import torch_tile as tt
from torch_tile import kernels as K

from conftest import requires_interpreter_scalar_loops

# The modules (their package attributes of the same names are the ops), for their Python backward functions.
ce_mod = importlib.import_module("torch_tile.kernels.cross_entropy")
ln_mod = importlib.import_module("torch_tile.kernels.layer_norm_backward")
rms_mod = importlib.import_module("torch_tile.kernels.rms_norm")
sm_mod = importlib.import_module("torch_tile.kernels.softmax_backward")
swiglu_mod = importlib.import_module("torch_tile.kernels.swiglu")

requires_autograd = pytest.mark.skipif(
    not hasattr(tt.TileOp, "register_autograd"),
    reason="TileOp.register_autograd is not available in this build: autograd through tile ops cannot run",
)

TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float16: dict(atol=2e-3, rtol=2e-3)}
GRAD_TOL = dict(atol=1e-4, rtol=1e-4)  # backward ops (sums over rows/columns) in float32


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _close(actual, expected, **tol):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    torch.testing.assert_close(actual.double(), expected.double(), **(tol or GRAD_TOL))


def _ctx(*saved):
    """A stand-in for autograd's ctx, for calling the Python backward functions directly."""
    return types.SimpleNamespace(saved_tensors=saved)


def _leaves(*tensors):
    return [t.detach().clone().requires_grad_(True) for t in tensors]


# -- references ------------------------------------------------------------------------------------


def ref_rms_norm(x, w, eps):
    xf = x.float() if x.dtype != torch.float64 else x
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + eps)
    return (xf * rstd[:, None] * w.to(xf.dtype)).to(x.dtype), rstd


def ref_swiglu(gate, up):
    return F.silu(gate) * up


def ref_cross_entropy(logits, target):
    lf = logits.float() if logits.dtype != torch.float64 else logits
    return F.cross_entropy(lf, target, reduction="none"), torch.logsumexp(lf, dim=-1)


def ref_layer_norm(x, w, b, eps=1e-5):
    return F.layer_norm(x, (x.shape[1],), w, b, eps)


# -- rms_norm ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(1, 1), (3, 40), (4, 64), (2, 1000)])
def test_rms_norm_forward(dtype, shape):
    x = torch.randn(shape, dtype=dtype)
    w = torch.randn(shape[1], dtype=dtype)
    out, rstd = K.rms_norm(x, w, 1e-6)
    ref_out, ref_rstd = ref_rms_norm(x, w, 1e-6)
    _close(out, ref_out, **{k: v * 4 for k, v in TOL[dtype].items()})
    assert rstd.dtype == torch.float32
    _close(rstd, ref_rstd, atol=1e-5, rtol=1e-5)


def test_rms_norm_float64_statistics():
    x, w = torch.randn(3, 40, dtype=torch.float64), torch.randn(40, dtype=torch.float64)
    out, rstd = K.rms_norm(x, w, 1e-6)
    ref_out, ref_rstd = ref_rms_norm(x, w, 1e-6)
    assert rstd.dtype == torch.float64
    _close(out, ref_out, atol=1e-12, rtol=1e-12)
    _close(rstd, ref_rstd, atol=1e-12, rtol=1e-12)


def test_rms_norm_eps_and_default():
    x = torch.zeros(2, 8)
    w = torch.ones(8)
    _out, rstd = K.rms_norm(x, w, 0.25)
    torch.testing.assert_close(rstd, torch.full((2,), 2.0))
    _out, rstd = K.rms_norm(x, w)  # default eps = 1e-6
    torch.testing.assert_close(rstd, torch.full((2,), 1e3))


def test_rms_norm_strided_rows():
    x = torch.randn(4, 80)[:, 10:60]
    w = torch.randn(50)
    for got, want in zip(K.rms_norm(x, w, 1e-6), ref_rms_norm(x, w, 1e-6)):
        _close(got, want, atol=1e-5, rtol=1e-5)


def _rms_norm_grads(x, w, g, eps=1e-6):
    x, w = _leaves(x, w)
    ref_rms_norm(x, w, eps)[0].backward(g)
    return x.grad, w.grad


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@pytest.mark.parametrize("shape", [(1, 1), (3, 40), (4, 64), (300, 7), (5, 200)])
def test_rms_norm_backward(shape):
    """(300, 7): more rows than partial sums (strided row loop, several column-sum tiles); (5, 200): two column
    blocks in the column sum."""
    x, w, g = torch.randn(shape), torch.randn(shape[1]), torch.randn(shape)
    _out, rstd = K.rms_norm(x, w, 1e-6)
    grad_x, grad_w = K.rms_norm_backward(g, x, w, rstd)
    ref_x, ref_w = _rms_norm_grads(x, w, g)
    _close(grad_x, ref_x)
    _close(grad_w, ref_w)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_rms_norm_backward_function_and_expanded_grad():
    """The Python backward with a stand-in ctx; grad_out with stride 0 (as from out.sum())."""
    x, w = torch.randn(3, 40), torch.randn(40)
    _out, rstd = K.rms_norm(x, w, 1e-6)
    g = torch.ones(1, 1).expand(3, 40)
    grad_x, grad_w, grad_eps = rms_mod._rms_norm_backward(_ctx(x, w, rstd), g, None)
    ref_x, ref_w = _rms_norm_grads(x, w, g)
    _close(grad_x, ref_x)
    _close(grad_w, ref_w)
    assert grad_eps is None


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_rms_norm_backward_weight_dtype_and_half():
    x, g = torch.randn(4, 64, dtype=torch.float16), torch.randn(4, 64, dtype=torch.float16)
    w = torch.randn(64)  # float32 weight with float16 activations
    _out, rstd = K.rms_norm(x, w, 1e-6)
    grad_x, grad_w = K.rms_norm_backward(g, x, w, rstd)
    assert grad_x.dtype == torch.float16 and grad_w.dtype == torch.float32
    ref_x, ref_w = _rms_norm_grads(x.float(), w, g.float())
    _close(grad_x.float(), ref_x, atol=1e-2, rtol=1e-2)
    _close(grad_w, ref_w, atol=1e-2, rtol=1e-2)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_rms_norm_empty_rows():
    x, w = torch.empty(0, 8), torch.randn(8)
    out, rstd = K.rms_norm(x, w, 1e-6)
    assert out.shape == (0, 8) and rstd.shape == (0,)
    grad_x, grad_w = K.rms_norm_backward(torch.empty(0, 8), x, w, rstd)
    assert grad_x.shape == (0, 8)
    assert torch.equal(grad_w, torch.zeros(8))


def test_rms_norm_rejects_bad_inputs():
    x, w = torch.randn(3, 8), torch.randn(8)
    _out, rstd = K.rms_norm(x, w, 1e-6)
    with pytest.raises(ValueError, match="tile::rms_norm: x must be 2-D"):
        K.rms_norm(torch.randn(8), w, 1e-6)
    with pytest.raises(ValueError, match="tile::rms_norm: weight must be 1-D with x.shape\\[1\\]"):
        K.rms_norm(x, torch.randn(7), 1e-6)
    with pytest.raises(ValueError, match="tile::rms_norm: cannot normalise rows of 0"):
        K.rms_norm(torch.empty(3, 0), torch.empty(0), 1e-6)
    with pytest.raises(ValueError, match="tile::rms_norm: x must be a floating-point"):
        K.rms_norm(torch.ones(3, 8, dtype=torch.int32), w, 1e-6)
    with pytest.raises(ValueError, match="tile::rms_norm_backward: x must be 2-D"):
        K.rms_norm_backward(torch.randn(2, 3, 8), torch.randn(2, 3, 8), w, rstd)
    with pytest.raises(ValueError, match="tile::rms_norm_backward: grad_out has dtype torch.float16 but x has"):
        K.rms_norm_backward(torch.randn(3, 8, dtype=torch.float16), x, w, rstd)
    with pytest.raises(ValueError, match="tile::rms_norm_backward: grad_out has shape \\(3, 9\\)"):
        K.rms_norm_backward(torch.randn(3, 9), x, w, rstd)
    with pytest.raises(ValueError, match="tile::rms_norm_backward: rstd must be 1-D with x.shape\\[0\\]"):
        K.rms_norm_backward(torch.randn(3, 8), x, w, torch.ones(4))
    with pytest.raises(ValueError, match="tile::rms_norm_backward: rstd must be torch.float32"):
        K.rms_norm_backward(torch.randn(3, 8), x, w, rstd.double())


# -- softmax backward --------------------------------------------------------------------------------


def _softmax_grad(x, g):
    (x,) = _leaves(x)
    torch.softmax(x, dim=-1).backward(g)
    return x.grad


@pytest.mark.parametrize("shape", [(1, 1), (3, 40), (4, 64), (2, 1025)])
def test_softmax_backward(shape):
    x, g = torch.randn(shape) * 3, torch.randn(shape)
    out = K.softmax(x)
    _close(K.softmax_backward(g, out), _softmax_grad(x, g), atol=1e-5, rtol=1e-5)


def test_softmax_backward_half():
    x, g = torch.randn(4, 64, dtype=torch.float16), torch.randn(4, 64, dtype=torch.float16)
    out = K.softmax(x)
    got = K.softmax_backward(g, out)
    assert got.dtype == torch.float16
    _close(got.float(), _softmax_grad(x.float(), g.float()), atol=2e-3, rtol=2e-3)


def test_softmax_backward_function_and_strides():
    """Python backward with a stand-in ctx; transposed grad and strided output rows."""
    x = torch.randn(4, 50)
    out = torch.zeros(4, 80)
    out[:, 5:55] = K.softmax(x)
    out = out[:, 5:55]
    g = torch.randn(50, 4).t()
    _close(sm_mod._softmax_backward(_ctx(out), g), _softmax_grad(x, g), atol=1e-5, rtol=1e-5)


def test_softmax_backward_zero_columns():
    assert K.softmax_backward(torch.empty(3, 0), torch.empty(3, 0)).shape == (3, 0)


def test_softmax_backward_rejects_bad_inputs():
    out = K.softmax(torch.randn(3, 8))
    with pytest.raises(ValueError, match="tile::softmax_backward: out must be 2-D"):
        K.softmax_backward(torch.randn(2, 3, 8), torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match="tile::softmax_backward: grad_out has dtype torch.float64 but out has"):
        K.softmax_backward(torch.randn(3, 8, dtype=torch.float64), out)
    with pytest.raises(ValueError, match="tile::softmax_backward: grad_out has shape \\(8,\\)"):
        K.softmax_backward(torch.randn(8), out)


# -- swiglu --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(1,), (3, 40), (4, 64), (2, 3, 300)])
def test_swiglu_forward(dtype, shape):
    gate, up = torch.randn(shape, dtype=dtype) * 3, torch.randn(shape, dtype=dtype)
    out = K.swiglu(gate, up)
    ref = ref_swiglu(gate.float(), up.float()).to(dtype)
    _close(out, ref, **{k: v * 4 for k, v in TOL[dtype].items()})


@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # the interpreter's numpy exp
def test_swiglu_extreme_gate():
    gate = torch.tensor([-1000.0, -80.0, 0.0, 80.0, 1000.0])
    up = torch.full((5,), 2.0)
    _close(K.swiglu(gate, up), ref_swiglu(gate, up), atol=1e-5, rtol=1e-5)
    grad_gate, grad_up = K.swiglu_backward(torch.ones(5), gate, up)
    (g_ref, u_ref) = _swiglu_grads(gate, up, torch.ones(5))
    _close(grad_gate, g_ref, atol=1e-5, rtol=1e-5)
    _close(grad_up, u_ref, atol=1e-5, rtol=1e-5)


def _swiglu_grads(gate, up, g):
    gate, up = _leaves(gate, up)
    ref_swiglu(gate, up).backward(g)
    return gate.grad, up.grad


@pytest.mark.parametrize("shape", [(3, 40), (4, 64), (2, 3, 300)])
def test_swiglu_backward(shape):
    gate, up, g = torch.randn(shape) * 3, torch.randn(shape), torch.randn(shape)
    grad_gate, grad_up = K.swiglu_backward(g, gate, up)
    ref_gate, ref_up = _swiglu_grads(gate, up, g)
    _close(grad_gate, ref_gate, atol=1e-5, rtol=1e-5)
    _close(grad_up, ref_up, atol=1e-5, rtol=1e-5)


def test_swiglu_backward_function_makes_grad_contiguous():
    gate, up = torch.randn(3, 40), torch.randn(3, 40)
    g = torch.ones(1, 1).expand(3, 40)  # as from out.sum()
    grad_gate, grad_up = swiglu_mod._swiglu_backward(_ctx(gate, up), g)
    ref_gate, ref_up = _swiglu_grads(gate, up, g)
    _close(grad_gate, ref_gate, atol=1e-5, rtol=1e-5)
    _close(grad_up, ref_up, atol=1e-5, rtol=1e-5)


def test_swiglu_rejects_bad_inputs():
    a = torch.randn(3, 8)
    with pytest.raises(ValueError, match="tile::swiglu: up has shape \\(3, 9\\) but gate has"):
        K.swiglu(a, torch.randn(3, 9))
    with pytest.raises(ValueError, match="tile::swiglu: up has dtype torch.float16 but gate has"):
        K.swiglu(a, a.half())
    with pytest.raises(ValueError, match="tile::swiglu: gate must be contiguous"):
        K.swiglu(torch.randn(8, 3).t(), a)
    with pytest.raises(ValueError, match="tile::swiglu_backward: grad_out has dtype torch.float64 but gate has"):
        K.swiglu_backward(a.double(), a, a)
    with pytest.raises(ValueError, match="tile::swiglu_backward: grad_out has shape \\(24,\\)"):
        K.swiglu_backward(torch.randn(24), a, a)
    with pytest.raises(ValueError, match="tile::swiglu_backward: grad_out must be contiguous"):
        K.swiglu_backward(torch.randn(8, 3).t(), a, a)


# -- cross_entropy ---------------------------------------------------------------------------------


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("rows, vocab", [(1, 1), (3, 50), (4, 64), (2, 5000)])
def test_cross_entropy_forward(dtype, rows, vocab):
    """(2, 5000): more than one 4096-column chunk (online logsumexp)."""
    logits = (torch.randn(rows, vocab) * 4).to(dtype)
    target = torch.randint(0, vocab, (rows,))
    loss, lse = K.cross_entropy(logits, target)
    ref_loss, ref_lse = ref_cross_entropy(logits, target)
    assert loss.dtype == lse.dtype == torch.float32
    _close(loss, ref_loss, atol=1e-5, rtol=1e-5)
    _close(lse, ref_lse, atol=1e-5, rtol=1e-5)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_cross_entropy_float64_and_int32_target():
    logits = torch.randn(3, 50, dtype=torch.float64)
    target = torch.randint(0, 50, (3,))
    loss, lse = K.cross_entropy(logits, target.int())
    ref_loss, ref_lse = ref_cross_entropy(logits, target)
    assert loss.dtype == lse.dtype == torch.float64
    _close(loss, ref_loss, atol=1e-12, rtol=1e-12)
    _close(lse, ref_lse, atol=1e-12, rtol=1e-12)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_cross_entropy_extreme_logits():
    logits = torch.tensor([[1000.0, 0.0, -1000.0], [-50.0, -50.0, -50.0]])
    target = torch.tensor([2, 1])
    for got, want in zip(K.cross_entropy(logits, target), ref_cross_entropy(logits, target)):
        _close(got, want, atol=1e-4, rtol=1e-5)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_cross_entropy_ignored_and_out_of_range_targets():
    logits = torch.randn(4, 10)
    target = torch.tensor([3, -100, 9, 10])
    loss, lse = K.cross_entropy(logits, target)
    ref_loss, ref_lse = ref_cross_entropy(logits[[0, 2]], target[[0, 2]])
    _close(loss[[0, 2]], ref_loss, atol=1e-5, rtol=1e-5)
    assert loss[1] == 0 and torch.isnan(loss[3])
    _close(lse, torch.logsumexp(logits, -1), atol=1e-5, rtol=1e-5)
    grad = K.cross_entropy_backward(torch.ones(4), logits, target, lse)
    assert torch.equal(grad[1], torch.zeros(10))
    assert torch.isnan(grad[3]).all()
    _close(grad[[0, 2]], _cross_entropy_grads(logits[[0, 2]], target[[0, 2]], torch.ones(2)), atol=1e-5, rtol=1e-5)


def _cross_entropy_grads(logits, target, grad_loss):
    (logits,) = _leaves(logits)
    F.cross_entropy(logits, target, reduction="none").backward(grad_loss)
    return logits.grad


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@pytest.mark.parametrize("rows, vocab", [(1, 1), (3, 50), (4, 64), (2, 5000)])
def test_cross_entropy_backward(rows, vocab):
    logits = torch.randn(rows, vocab) * 4
    target = torch.randint(0, vocab, (rows,))
    grad_loss = torch.randn(rows)
    _loss, lse = K.cross_entropy(logits, target)
    got = K.cross_entropy_backward(grad_loss, logits, target, lse)
    _close(got, _cross_entropy_grads(logits, target, grad_loss), atol=1e-5, rtol=1e-5)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_cross_entropy_backward_half_logits():
    logits = (torch.randn(3, 50) * 4).half()
    target = torch.randint(0, 50, (3,))
    _loss, lse = K.cross_entropy(logits, target)
    got = K.cross_entropy_backward(torch.ones(3), logits, target, lse)
    assert got.dtype == torch.float16
    _close(got.float(), _cross_entropy_grads(logits.float(), target, torch.ones(3)), atol=1e-3, rtol=1e-3)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_cross_entropy_backward_function_with_mean_grad():
    """The gradient of loss.mean() arrives expanded (stride 0): read as is."""
    logits = torch.randn(4, 50)
    target = torch.randint(0, 50, (4,))
    _loss, lse = K.cross_entropy(logits, target)
    grad_loss = torch.full((1,), 0.25).expand(4)
    assert grad_loss.stride() == (0,)
    got, grad_target = ce_mod._cross_entropy_backward(_ctx(logits, target, lse), grad_loss, None)
    (ref,) = _leaves(logits)
    F.cross_entropy(ref, target).backward()
    _close(got, ref.grad, atol=1e-6, rtol=1e-5)
    assert grad_target is None


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_cross_entropy_strided_logits():
    logits = torch.randn(50, 3).t()  # (3, 50), column stride 3
    target = torch.randint(0, 50, (3,))
    loss, lse = K.cross_entropy(logits, target)
    for got, want in zip((loss, lse), ref_cross_entropy(logits, target)):
        _close(got, want, atol=1e-5, rtol=1e-5)
    grad = K.cross_entropy_backward(torch.ones(3), logits, target, lse)
    _close(grad, _cross_entropy_grads(logits, target, torch.ones(3)), atol=1e-5, rtol=1e-5)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_cross_entropy_rejects_bad_inputs():
    logits, target = torch.randn(3, 10), torch.randint(0, 10, (3,))
    _loss, lse = K.cross_entropy(logits, target)
    with pytest.raises(ValueError, match="tile::cross_entropy: logits must be 2-D"):
        K.cross_entropy(torch.randn(2, 3, 10), target)
    with pytest.raises(ValueError, match="tile::cross_entropy: target must be int64"):
        K.cross_entropy(logits, target.float())
    with pytest.raises(ValueError, match="tile::cross_entropy: target must be 1-D with logits.shape\\[0\\]"):
        K.cross_entropy(logits, torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match="tile::cross_entropy: logits need at least one column"):
        K.cross_entropy(torch.empty(3, 0), target)
    with pytest.raises(ValueError, match="tile::cross_entropy_backward: grad_loss has dtype torch.float64 but lse"):
        K.cross_entropy_backward(torch.ones(3, dtype=torch.float64), logits, target, lse)
    with pytest.raises(ValueError, match="tile::cross_entropy_backward: grad_loss has shape \\(3, 1\\)"):
        K.cross_entropy_backward(torch.ones(3, 1), logits, target, lse)
    with pytest.raises(ValueError, match="tile::cross_entropy_backward: lse must be torch.float32"):
        K.cross_entropy_backward(torch.ones(3), logits, target, lse.double())
    with pytest.raises(ValueError, match="tile::cross_entropy_backward: logits must be 2-D"):
        K.cross_entropy_backward(torch.ones(3), torch.randn(30), target, lse)


# -- layer_norm backward -----------------------------------------------------------------------------


def _layer_norm_grads(x, w, b, g):
    x, w, b = _leaves(x, w, b)
    ref_layer_norm(x, w, b).backward(g)
    return x.grad, w.grad, b.grad


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@pytest.mark.parametrize("shape", [(1, 1), (3, 40), (4, 64), (300, 7), (5, 200)])
def test_layer_norm_backward(shape):
    x = torch.randn(shape) * 2 + 0.5
    w, b, g = torch.randn(shape[1]), torch.randn(shape[1]), torch.randn(shape)
    _out, mean, rstd = K.layer_norm(x, w, b)
    got = K.layer_norm_backward(g, x, w, mean, rstd)
    for a, e in zip(got, _layer_norm_grads(x, w, b, g)):
        _close(a, e)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_layer_norm_backward_function_and_strides():
    x = torch.randn(4, 80)[:, :50]
    w, b = torch.randn(50), torch.randn(50)
    g = torch.randn(50, 4).t()
    _out, mean, rstd = K.layer_norm(x, w, b)
    grad_x, grad_w, grad_b, grad_eps = ln_mod._layer_norm_backward(_ctx(x, w, mean, rstd), g, None, None)
    for a, e in zip((grad_x, grad_w, grad_b), _layer_norm_grads(x, w, b, g)):
        _close(a, e)
    assert grad_eps is None


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_layer_norm_backward_half():
    x, g = torch.randn(4, 64, dtype=torch.float16), torch.randn(4, 64, dtype=torch.float16)
    w, b = torch.randn(64, dtype=torch.float16), torch.randn(64, dtype=torch.float16)
    _out, mean, rstd = K.layer_norm(x, w, b)
    got = K.layer_norm_backward(g, x, w, mean, rstd)
    assert all(t.dtype == torch.float16 for t in got)
    for a, e in zip(got, _layer_norm_grads(x.float(), w.float(), b.float(), g.float())):
        _close(a.float(), e, atol=2e-2, rtol=1e-2)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
def test_layer_norm_backward_empty_rows():
    x, w = torch.empty(0, 8), torch.randn(8)
    grad_x, grad_w, grad_b = K.layer_norm_backward(torch.empty(0, 8), x, w, torch.empty(0), torch.empty(0))
    assert grad_x.shape == (0, 8)
    assert torch.equal(grad_w, torch.zeros(8)) and torch.equal(grad_b, torch.zeros(8))


def test_layer_norm_backward_rejects_bad_inputs():
    x, w, b = torch.randn(3, 8), torch.randn(8), torch.randn(8)
    _out, mean, rstd = K.layer_norm(x, w, b)
    with pytest.raises(ValueError, match="tile::layer_norm_backward: x must be 2-D"):
        K.layer_norm_backward(torch.randn(24), torch.randn(24), w, mean, rstd)
    with pytest.raises(ValueError, match="tile::layer_norm_backward: grad_out has dtype torch.float16 but x has"):
        K.layer_norm_backward(torch.randn(3, 8, dtype=torch.float16), x, w, mean, rstd)
    with pytest.raises(ValueError, match="tile::layer_norm_backward: weight must be 1-D with x.shape\\[1\\]"):
        K.layer_norm_backward(torch.randn(3, 8), x, torch.randn(9), mean, rstd)
    with pytest.raises(ValueError, match="tile::layer_norm_backward: mean must be 1-D with x.shape\\[0\\]"):
        K.layer_norm_backward(torch.randn(3, 8), x, w, torch.randn(3, 1), rstd)


# -- shapes on meta tensors (the fake implementation runs the same checks) ----------------------------------


def test_meta_shapes():
    m = dict(device="meta")
    x, w = torch.empty(5, 40, **m), torch.empty(40, **m)
    out, rstd = K.rms_norm(x, w, 1e-6)
    assert out.shape == (5, 40) and rstd.shape == (5,) and rstd.dtype == torch.float32
    gx, gw = K.rms_norm_backward(x, x, w, rstd)
    assert gx.shape == (5, 40) and gw.shape == (40,)
    assert K.softmax_backward(x, x).shape == (5, 40)
    assert [t.shape for t in K.swiglu_backward(x, x, x)] == [(5, 40), (5, 40)]
    loss, lse = K.cross_entropy(x, torch.empty(5, dtype=torch.int64, **m))
    assert loss.shape == lse.shape == (5,)
    assert K.cross_entropy_backward(loss, x, torch.empty(5, dtype=torch.int64, **m), lse).shape == (5, 40)
    assert [t.shape for t in K.layer_norm_backward(x, x, w, rstd, rstd)] == [(5, 40), (40,), (40,)]
    with pytest.raises(ValueError, match="tile::rms_norm_backward: grad_out has dtype"):
        K.rms_norm_backward(x.half(), x, w, rstd)


# -- autograd through the ops ------------------------------------------------------------------------------


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@requires_autograd
def test_autograd_rms_norm():
    x, w, g = torch.randn(3, 40), torch.randn(40), torch.randn(3, 40)
    xl, wl = _leaves(x, w)
    out, rstd = K.rms_norm(xl, wl, 1e-6)
    assert out.requires_grad and not rstd.requires_grad
    out.backward(g)
    ref_x, ref_w = _rms_norm_grads(x, w, g)
    _close(xl.grad, ref_x)
    _close(wl.grad, ref_w)


@requires_autograd
def test_autograd_softmax():
    x, g = torch.randn(3, 40), torch.randn(3, 40)
    (xl,) = _leaves(x)
    K.softmax(xl).backward(g)
    _close(xl.grad, _softmax_grad(x, g), atol=1e-5, rtol=1e-5)


@requires_autograd
def test_autograd_swiglu_sum():
    gate, up = torch.randn(2, 3, 20), torch.randn(2, 3, 20)
    gl, ul = _leaves(gate, up)
    K.swiglu(gl, ul).sum().backward()  # expanded incoming gradient
    ref_gate, ref_up = _swiglu_grads(gate, up, torch.ones(2, 3, 20))
    _close(gl.grad, ref_gate, atol=1e-5, rtol=1e-5)
    _close(ul.grad, ref_up, atol=1e-5, rtol=1e-5)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@requires_autograd
def test_autograd_cross_entropy_mean():
    logits, target = torch.randn(4, 50), torch.randint(0, 50, (4,))
    (ll,) = _leaves(logits)
    loss, lse = K.cross_entropy(ll, target)
    assert not lse.requires_grad
    loss.mean().backward()
    (ref,) = _leaves(logits)
    F.cross_entropy(ref, target).backward()
    _close(ll.grad, ref.grad, atol=1e-6, rtol=1e-5)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@requires_autograd
def test_autograd_layer_norm():
    x, w, b, g = torch.randn(3, 40), torch.randn(40), torch.randn(40), torch.randn(3, 40)
    xl, wl, bl = _leaves(x, w, b)
    out, mean, rstd = K.layer_norm(xl, wl, bl)
    assert not mean.requires_grad and not rstd.requires_grad
    out.backward(g)
    for a, e in zip((xl.grad, wl.grad, bl.grad), _layer_norm_grads(x, w, b, g)):
        _close(a, e)


def _f64(*shape):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=True)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@requires_autograd
def test_gradcheck_rms_norm():
    assert torch.autograd.gradcheck(lambda x, w: K.rms_norm(x, w, 1e-6), (_f64(3, 8), _f64(8)))


@requires_autograd
def test_gradcheck_swiglu():
    assert torch.autograd.gradcheck(K.swiglu, (_f64(2, 3, 4), _f64(2, 3, 4)))


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@requires_autograd
def test_gradcheck_cross_entropy():
    target = torch.tensor([0, 4, 9])
    assert torch.autograd.gradcheck(lambda x: K.cross_entropy(x, target), (_f64(3, 10),))


@requires_autograd
def test_gradcheck_softmax():
    # tile::softmax computes in float32 even for float64 input, so the numerical
    # Jacobian needs a larger step and tolerance than gradcheck's defaults.
    assert torch.autograd.gradcheck(K.softmax, (_f64(3, 8),), eps=1e-3, atol=1e-4, rtol=1e-3)


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@requires_autograd
def test_gradcheck_layer_norm():
    # tile::layer_norm computes in float32 (and keeps float32 statistics) for float64 input; its outputs are
    # O(1), so float32 rounding over a 2e-3 step is ~1e-4: a step of 1e-2 (truncation ~1e-5) and atol 1e-3.
    x = torch.randn(3, 8, dtype=torch.float64) * 2 + 0.5
    assert torch.autograd.gradcheck(lambda x, w, b: K.layer_norm(x, w, b, 1e-5),
                                    (x.requires_grad_(True), _f64(8), _f64(8)), eps=1e-2, atol=1e-3, rtol=1e-3)


# -- a small decoder block, end to end ----------------------------------------------------------------------


def _decoder_block(x, params, target, tile):
    """Pre-norm decoder block (causal single-head attention + SwiGLU MLP) and an LM-head loss.

    Matmuls, reshapes and the causal mask stay in torch; norms, softmax, SwiGLU and the loss
    are tile ops when ``tile`` is set, their torch references otherwise."""
    (w_norm1, wq, wk, wv, wo, w_norm2, w_gate, w_up, w_down, w_normf, w_head) = params
    seq, dim = x.shape

    def norm(h, w):
        return K.rms_norm(h, w, 1e-6)[0] if tile else ref_rms_norm(h, w, 1e-6)[0]

    h = norm(x, w_norm1)
    q, k, v = h @ wq, h @ wk, h @ wv
    scores = (q @ k.t()) / dim ** 0.5
    causal = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(causal, float("-inf"))
    attn = K.softmax(scores) if tile else torch.softmax(scores, dim=-1)
    x = x + (attn @ v) @ wo
    h = norm(x, w_norm2)
    gate, up = h @ w_gate, h @ w_up
    x = x + (K.swiglu(gate, up) if tile else ref_swiglu(gate, up)) @ w_down
    logits = norm(x, w_normf) @ w_head
    loss = K.cross_entropy(logits, target)[0] if tile else ref_cross_entropy(logits, target)[0]
    return loss.mean()


@requires_interpreter_scalar_loops  # loops to a runtime bound (see conftest)
@requires_autograd
def test_decoder_block_gradients_match_torch():
    seq, dim, hidden, vocab = 6, 16, 24, 50
    x = torch.randn(seq, dim)
    shapes = [(dim,), (dim, dim), (dim, dim), (dim, dim), (dim, dim), (dim,), (dim, hidden), (dim, hidden),
              (hidden, dim), (dim,), (dim, vocab)]
    params = [torch.ones(s) + 0.1 * torch.randn(s) if len(s) == 1 else torch.randn(s) / s[0] ** 0.5 for s in shapes]
    target = torch.randint(0, vocab, (seq,))
    results = []
    for tile in (True, False):
        xs = x.clone().requires_grad_(True)
        ps = _leaves(*params)
        loss = _decoder_block(xs, ps, target, tile)
        loss.backward()
        results.append((loss.detach(), xs.grad, [p.grad for p in ps]))
    (tile_loss, tile_dx, tile_grads), (ref_loss, ref_dx, ref_grads) = results
    torch.testing.assert_close(tile_loss, ref_loss, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(tile_dx, ref_dx, atol=1e-5, rtol=1e-4)
    for got, want in zip(tile_grads, ref_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
