"""CPU tests: the example ops on CPU tensors, run through Triton's interpreter.

On CPU an op runs its body eagerly and each ``kernel[grid](...)`` executes in
Triton's interpreter (the debug path for machines without a GPU). Every result
here is compared with the equivalent torch computation. Sizes stay small: the
interpreter is slow.
"""

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile._launch_mode import launch_mode
from torch_tile.frontends.triton.interpret import InterpretLaunches

from conftest import requires_interpreter_scalar_loops

FLOAT_DTYPES = [torch.float32, torch.float16]
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float16: dict(atol=2e-3, rtol=2e-3)}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _close(actual, expected, dtype, scale=1.0):
    tol = {k: v * scale for k, v in TOL[dtype].items()}
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual.float(), expected.float(), **tol)


# -- add / add_ ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (1000,), (1024,), (2500,), (3, 7, 11)])
def test_add(dtype, shape):
    x = torch.randn(shape, dtype=dtype)
    y = torch.randn(shape, dtype=dtype)
    out = torch.ops.tile.add(x, y)
    # Elementwise add in the input dtype is exact in both implementations.
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    assert out.data_ptr() not in (x.data_ptr(), y.data_ptr())


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_add_integers(dtype):
    x = torch.randint(-1000, 1000, (777,), dtype=dtype)
    y = torch.randint(-1000, 1000, (777,), dtype=dtype)
    assert torch.equal(torch.ops.tile.add(x, y), x + y)


def test_add_empty():
    x = torch.empty(0)
    out = torch.ops.tile.add(x, x)
    assert out.shape == (0,) and out.dtype == torch.float32


def test_add_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="same shape"):
        torch.ops.tile.add(torch.randn(4), torch.randn(5))


def test_add_rejects_non_contiguous():
    x = torch.randn(8, 8).t()
    with pytest.raises(ValueError, match="contiguous"):
        torch.ops.tile.add(x, torch.randn(8, 8))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_inplace(dtype):
    x = torch.randn(1500, dtype=dtype)
    y = torch.randn(1500, dtype=dtype)
    expected = x + y
    ptr = x.data_ptr()
    result = torch.ops.tile.add_(x, y)
    assert result is None
    assert x.data_ptr() == ptr
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


def test_add_inplace_leaves_y_alone():
    x, y = torch.randn(40), torch.randn(40)
    y0 = y.clone()
    torch.ops.tile.add_(x, y)
    assert torch.equal(y, y0)


# -- softmax ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 1),
        (4, 7),
        (3, 100),
        (2, 1024),  # BLOCK = 1024 < 2048: 4 warps
        (2, 1025),  # BLOCK = 2048: 8 warps
        (3, 3000),  # BLOCK = 4096: 8 warps
    ],
)
def test_softmax(dtype, shape):
    x = torch.randn(shape, dtype=dtype) * 3
    out = torch.ops.tile.softmax(x)
    _close(out, torch.softmax(x.float(), dim=-1).to(dtype), dtype)


def test_softmax_both_sides_of_the_num_warps_branch():
    small = torch.randn(3, 500)
    large = torch.randn(3, 3000)
    for x in (small, large):
        out = torch.ops.tile.softmax(x)
        _close(out, torch.softmax(x, dim=-1), torch.float32)
        torch.testing.assert_close(out.sum(-1), torch.ones(3))


def test_softmax_strided_rows():
    """Rows that are contiguous but spaced apart (stride(0) != n_cols)."""
    base = torch.randn(5, 160)
    x = base[:, 10:110]
    assert x.stride() == (160, 1)
    _close(torch.ops.tile.softmax(x), torch.softmax(x, dim=-1), torch.float32)


def test_softmax_extreme_values():
    x = torch.tensor([[1000.0, 0.0, -1000.0], [-50.0, -50.0, -50.0]])
    _close(torch.ops.tile.softmax(x), torch.softmax(x, dim=-1), torch.float32)


def test_softmax_rejects_bad_inputs():
    with pytest.raises(ValueError, match="2-D"):
        torch.ops.tile.softmax(torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match="contiguous"):
        torch.ops.tile.softmax(torch.randn(6, 5).t())


# -- layer_norm -------------------------------------------------------------------------------------


def _ref_layer_norm(x, w, b, eps):
    out, mean, rstd = torch.native_layer_norm(x.float(), [x.shape[1]], w.float(), b.float(), eps)
    return out.to(x.dtype), mean.reshape(-1), rstd.reshape(-1)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (4, 33), (3, 256), (2, 1000)])
def test_layer_norm(dtype, shape):
    x = torch.randn(shape, dtype=dtype) * 2 + 0.5
    w = torch.randn(shape[1], dtype=dtype)
    b = torch.randn(shape[1], dtype=dtype)
    out, mean, rstd = torch.ops.tile.layer_norm(x, w, b)
    ref_out, ref_mean, ref_rstd = _ref_layer_norm(x, w, b, 1e-5)
    _close(out, ref_out, dtype, scale=4)
    # Statistics are accumulated and returned in float32 (as on CUDA), one per row.
    assert mean.dtype == rstd.dtype == torch.float32
    torch.testing.assert_close(mean, ref_mean, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(rstd, ref_rstd, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("eps", [1e-5, 0.1, 10.0])
def test_layer_norm_eps(eps):
    """eps is a float argument: it reaches the kernel unchanged (positional or keyword)."""
    x, w, b = torch.randn(3, 40), torch.randn(40), torch.randn(40)
    ref = _ref_layer_norm(x, w, b, eps)
    for result in (torch.ops.tile.layer_norm(x, w, b, eps), torch.ops.tile.layer_norm(x, w, b, eps=eps)):
        for got, want in zip(result, ref):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_layer_norm_default_eps_matters():
    """With a constant row, the result is b and rstd = 1/sqrt(eps): the default eps is 1e-5."""
    x = torch.full((2, 16), 3.0)
    w, b = torch.ones(16), torch.linspace(-1, 1, 16)
    out, mean, rstd = torch.ops.tile.layer_norm(x, w, b)
    torch.testing.assert_close(out, b.expand(2, 16))
    torch.testing.assert_close(mean, torch.full((2,), 3.0))
    torch.testing.assert_close(rstd, torch.full((2,), 1e-5 ** -0.5), rtol=1e-5, atol=0)


def test_layer_norm_strided_rows():
    base = torch.randn(4, 80)
    x = base[:, :50]
    w, b = torch.randn(50), torch.randn(50)
    for got, want in zip(torch.ops.tile.layer_norm(x, w, b), _ref_layer_norm(x, w, b, 1e-5)):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_layer_norm_rejects_bad_inputs():
    with pytest.raises(ValueError, match="2-D"):
        torch.ops.tile.layer_norm(torch.randn(8), torch.randn(8), torch.randn(8))
    with pytest.raises(ValueError, match="x.shape\\[1\\] elements"):
        torch.ops.tile.layer_norm(torch.randn(2, 8), torch.randn(7), torch.randn(8))


# -- matmul ----------------------------------------------------------------------------------------


@requires_interpreter_scalar_loops
@pytest.mark.parametrize("M, K_, N", [(1, 1, 1), (16, 32, 16), (40, 50, 30), (70, 33, 65)])
def test_matmul_fp32(M, K_, N):
    a = torch.randn(M, K_)
    b = torch.randn(K_, N)
    out = torch.ops.tile.matmul(a, b)
    assert out.shape == (M, N) and out.dtype == torch.float32
    torch.testing.assert_close(out, a @ b, atol=1e-4, rtol=1e-4)


@requires_interpreter_scalar_loops
def test_matmul_fp16():
    a = torch.randn(48, 40, dtype=torch.float16)
    b = torch.randn(40, 24, dtype=torch.float16)
    out = torch.ops.tile.matmul(a, b)
    assert out.dtype == torch.float16
    torch.testing.assert_close(out.float(), a.float() @ b.float(), atol=5e-2, rtol=1e-2)


@requires_interpreter_scalar_loops
def test_matmul_transposed_operands():
    a = torch.randn(20, 36).t()  # (36, 20), strides (1, 36)
    b = torch.randn(17, 20).t()  # (20, 17), strides (1, 20)
    torch.testing.assert_close(torch.ops.tile.matmul(a, b), a @ b, atol=1e-4, rtol=1e-4)


def test_matmul_rejects_bad_shapes():
    with pytest.raises(ValueError, match="cannot be multiplied"):
        torch.ops.tile.matmul(torch.randn(3, 4), torch.randn(5, 6))


# -- what the CPU path does not do ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: torch.ops.tile.add(torch.randn(8, dtype=torch.bfloat16), torch.randn(8, dtype=torch.bfloat16)),
        lambda: torch.ops.tile.softmax(torch.randn(2, 8, dtype=torch.bfloat16)),
        lambda: torch.ops.tile.matmul(torch.randn(4, 4, dtype=torch.bfloat16), torch.randn(4, 4, dtype=torch.bfloat16)),
    ],
    ids=["add", "softmax", "matmul"],
)
def test_bfloat16_on_cpu_not_implemented(call):
    with pytest.raises(NotImplementedError, match="bfloat16"):
        call()


def test_bfloat16_inplace_leaves_input_untouched():
    x = torch.randn(8, dtype=torch.bfloat16)
    x0 = x.clone()
    with pytest.raises(NotImplementedError):
        torch.ops.tile.add_(x, torch.randn(8, dtype=torch.bfloat16))
    assert torch.equal(x, x0)


def test_cpu_path_does_not_touch_the_native_runtime():
    before = tt.runtime_counters()
    compiles = tt.compile_count()
    plans = (K.add.plan_count, K.softmax.plan_count)
    torch.ops.tile.add(torch.randn(10), torch.randn(10))
    torch.ops.tile.softmax(torch.randn(2, 10))
    assert tt.runtime_counters() == before
    assert tt.compile_count() == compiles
    assert (K.add.plan_count, K.softmax.plan_count) == plans


def test_interpreter_leaves_triton_untouched():
    """After a CPU call, Triton is back to normal: launch routing and the interpret knob are restored."""
    import triton
    from triton.runtime.jit import JITFunction

    run_before = JITFunction.run
    call_before = JITFunction.__call__
    knob_before = triton.knobs.runtime.interpret
    torch.ops.tile.add(torch.randn(10), torch.randn(10))
    with pytest.raises(NotImplementedError):
        torch.ops.tile.add(torch.randn(8, dtype=torch.bfloat16), torch.randn(8, dtype=torch.bfloat16))
    assert JITFunction.run is run_before
    assert JITFunction.__call__ is call_before
    assert triton.knobs.runtime.interpret == knob_before


# -- empty sizes -------------------------------------------------------------------------------------


def test_empty_rows():
    assert torch.ops.tile.softmax(torch.empty(0, 10)).shape == (0, 10)
    out, mean, rstd = torch.ops.tile.layer_norm(torch.empty(0, 10), torch.ones(10), torch.zeros(10))
    assert (out.shape, mean.shape, rstd.shape) == ((0, 10), (0,), (0,))
    assert torch.ops.tile.matmul(torch.empty(0, 5), torch.randn(5, 3)).shape == (0, 3)


@requires_interpreter_scalar_loops
def test_matmul_empty_inner_dimension_is_zeros():
    out = torch.ops.tile.matmul(torch.empty(3, 0), torch.empty(0, 4))
    assert torch.equal(out, torch.zeros(3, 4))


def test_softmax_zero_columns():
    x = torch.empty(4, 0)
    assert torch.ops.tile.softmax(x).shape == torch.softmax(x, dim=-1).shape


# -- kernel arguments as Triton's interpreter takes them ---------------------------------------------


@triton.jit
def _doubled_if_kernel(x_ptr, out_ptr, n, DOUBLE, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.load(x_ptr + offsets, mask=mask)
    if DOUBLE:  # a bool argument, not a constexpr: an int1 scalar of the launch
        value = value * 2
    tl.store(out_ptr + offsets, value, mask=mask)


@tt.op("cpu_interpreter::doubled_if")
def doubled_if(x: torch.Tensor, double: bool) -> torch.Tensor:
    out = torch.empty_like(x)
    _doubled_if_kernel[(1,)](x, out, x.numel(), double, BLOCK=16)
    return out


def test_a_bool_kernel_argument_runs_on_every_triton():
    # Triton 3.6's own interpreter raises for a bool argument (it builds an int1 from a numpy int32); the CPU path
    # converts it as Triton 3.8's interpreter does.
    x = torch.randn(10)
    torch.testing.assert_close(doubled_if(x, True), 2 * x, rtol=0, atol=0)
    torch.testing.assert_close(doubled_if(x, False), x, rtol=0, atol=0)
    out = torch.empty_like(x)
    with launch_mode(InterpretLaunches()):  # Triton's own launch of the kernel, through the same interpreter
        _doubled_if_kernel[(1,)](x, out, x.numel(), True, BLOCK=16)
    torch.testing.assert_close(out, 2 * x, rtol=0, atol=0)
