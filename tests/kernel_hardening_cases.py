"""The example ops against silent wrong results, as cases shared by
test_cpu_hardening_kernels.py (Triton's interpreter) and test_gpu_hardening_kernels.py (the native path).

Each case is a function of the device. It calls ops with strided, spaced, transposed and expanded
(stride 0) arguments and with dtypes, and asserts either agreement with torch's own computation in
float64 from the same inputs (an independent reference) or a clear refusal naming the op, the argument,
what was expected and what came. Cases call the plain (contiguous) form first: on CUDA the variants then
meet a cached plan, which must not serve them unless it is right for them.
"""

import re

import pytest
import torch
import torch.nn.functional as F

import torch_tile.kernels  # noqa: F401  (registers tile::*)
from torch_tile.kernels._common import stats_dtype  # the statistics' documented dtype (float32; float64 for float64)

T = torch.ops.tile
CASES = []

TOL = {torch.float64: 1e-9, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}
MATMUL_TOL = {torch.float32: 2e-2, torch.float16: 2e-2, torch.bfloat16: 6e-2}  # fp32: TF32 on the GPU
EXOTIC = (torch.float8_e4m3fn, torch.float8_e5m2)


def case(fn=None, *, interpreter_loops: bool = False):
    """Registers a case; ``interpreter_loops``: on CPU it needs an interpreter that loops to a scalar
    bound (tl.dot kernels; see conftest.requires_interpreter_scalar_loops)."""
    def register(f):
        f.needs_interpreter_loops = interpreter_loops
        CASES.append(f)
        return f
    return register(fn) if fn is not None else register


# -- helpers --------------------------------------------------------------------------------------


def float_dtypes(device: str) -> tuple:
    # Triton's interpreter computes bfloat16 wrongly, so the CPU path refuses it.
    low = (torch.float16,) if device == "cpu" else (torch.float16, torch.bfloat16)
    return (torch.float32, *low, torch.float64)


def half_dtypes(device: str) -> tuple:
    return (torch.float16,) if device == "cpu" else (torch.float16, torch.bfloat16)


def rand(device: str, *shape, dtype=torch.float32):
    return torch.randn(shape, device=device).to(dtype)


def vectors(device: str, n: int, dtype) -> list:
    """n elements: contiguous, strided, expanded (one element, stride 0)."""
    return [rand(device, n, dtype=dtype), rand(device, 2 * n, dtype=dtype)[::2], rand(device, 1, dtype=dtype).expand(n)]


def row_layouts(device: str, rows: int, cols: int, dtype) -> list:
    """(rows, cols) with contiguous rows: dense, spaced (a column slice), expanded (one row, stride 0)."""
    return [rand(device, rows, cols, dtype=dtype), rand(device, rows, cols + 5, dtype=dtype)[:, 2:cols + 2],
            rand(device, 1, cols, dtype=dtype).expand(rows, cols)]


def any_layouts(device: str, rows: int, cols: int, dtype) -> list:
    """row_layouts, then transposed, strided columns and expanded columns."""
    return row_layouts(device, rows, cols, dtype) + [
        rand(device, cols, rows, dtype=dtype).t(), rand(device, rows, 2 * cols, dtype=dtype)[:, ::2],
        rand(device, rows, 1, dtype=dtype).expand(rows, cols)]


def spaced(t):
    """``t``'s values in a vector of stride 2."""
    out = torch.empty(2 * t.numel(), dtype=t.dtype, device=t.device)[::2]
    out.copy_(t)
    return out


def close(actual, expected, scale: float = 1.0, tol: dict = TOL):
    """The op's result against torch's float64 reference, within the tolerance of the result's dtype."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    t = tol[actual.dtype] * scale
    torch.testing.assert_close(actual.double(), expected.double(), atol=t, rtol=t)


def refuses(call, pattern: str, exc=ValueError):
    with pytest.raises(exc, match=pattern):
        call()


def dtype_refusal(op: str, arg: str, dtype) -> str:
    """The body's message (``op: arg must be ..., got dtype``), for dtypes no plan holds the runtime's (``op:
    argument 'arg' expected a dtype a launch plan can hold, got ...``), or for complex ones a body that does not
    check passes to a kernel, the launch's (``op: line: kernel argument ... is a torch.complex64 tensor``)."""
    names = "complex64|ComplexFloat" if dtype == torch.complex64 else re.escape(str(dtype))
    return (rf"{op}: ((argument '\w+' expected a dtype a launch plan can hold|.*\b{arg}\b.* must\b).*got .*({names})"
            rf"|.* is a torch\.({names}) tensor: tile kernels take no complex tensors)")


def grads(fn, inputs, grad_out):
    """torch autograd of ``fn`` in float64: the reference for the backward ops."""
    leaves = [t.detach().double().requires_grad_(True) for t in inputs]
    return torch.autograd.grad(fn(*leaves), leaves, grad_out.double())


def ln_stats(x, eps):
    """Per-row mean and rstd of x in float64 (torch's definition: biased variance)."""
    xd = x.double()
    return xd.mean(-1), torch.rsqrt(xd.var(-1, unbiased=False) + eps)


# -- tile::add / tile::add_ --------------------------------------------------------------------------


@case
def add_bool_is_logical_or(device):
    x = torch.tensor([True, True, False, False], device=device)
    y = torch.tensor([True, False, True, False], device=device)
    big_x, big_y = (torch.rand(3000, device=device) < 0.5 for _ in range(2))
    for a, b in ((x, y), (big_x, big_y)):
        expected = torch.add(a, b)  # True + True is True
        out = T.add(a, b)
        assert out.dtype == torch.bool and torch.equal(out, expected)
        a = a.clone()
        T.add_(a, b)
        assert torch.equal(a, expected)


@case
def add_integers_wrap_as_torch(device):
    for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        info = torch.iinfo(dtype)
        low, high = max(info.min, -2**62), min(info.max, 2**62)  # sums still overflow: they must wrap
        x = torch.randint(low, high, (2000,), dtype=dtype, device=device)
        y = torch.randint(low, high, (2000,), dtype=dtype, device=device)
        assert torch.equal(T.add(x, y), torch.add(x, y)), dtype
        expected = torch.add(x, y)
        T.add_(x, y)
        assert torch.equal(x, expected), dtype


@case
def add_floats_exactly_as_torch(device):
    for dtype in float_dtypes(device):
        x, y = rand(device, 3, 700, dtype=dtype), rand(device, 3, 700, dtype=dtype)
        assert torch.equal(T.add(x, y), torch.add(x, y)), dtype


@case
def add_refuses_mixed_dtypes(device):
    pairs = [(torch.float32, torch.float16), (torch.int32, torch.float32), (torch.bool, torch.int64)]
    for op, call in (("tile::add", T.add), ("tile::add_", T.add_)):
        for x_dtype, y_dtype in pairs:
            x, y = rand(device, 16, dtype=x_dtype), rand(device, 16, dtype=y_dtype)
            refuses(lambda: call(x, y), rf"{op}: y has dtype {y_dtype} but x has {x_dtype}")


@case
def add_refuses_dtypes_torch_add_refuses(device):
    for dtype in (torch.uint16, torch.uint32, torch.uint64, *EXOTIC):
        x = torch.empty(16, dtype=dtype, device=device)  # refused before any kernel reads it
        for op, call in (("tile::add", T.add), ("tile::add_", T.add_)):
            refuses(lambda: call(x, x), rf"{op}: x must be bool, uint8, int8/16/32/64 or "
                                        rf"float16/bfloat16/float32/float64, got {dtype}")


@case
def add_refuses_non_contiguous(device):
    plain = rand(device, 6, 8)
    T.add(plain, plain)
    T.add_(plain.clone(), plain)
    transposed = rand(device, 8, 6).t()
    refuses(lambda: T.add(transposed, plain),
            r"tile::add: x must be contiguous, got shape \(6, 8\) and strides \(1, 6\)")
    strided = rand(device, 6, 16)[:, ::2]
    refuses(lambda: T.add(plain, strided), r"tile::add: y must be contiguous, got shape \(6, 8\) and strides \(16, 2\)")
    expanded = rand(device, 1, 8).expand(6, 8)
    refuses(lambda: T.add(expanded, plain), r"tile::add: x must be contiguous, got shape \(6, 8\) and strides \(0, 1\)")
    # A written self-overlapping x: the runtime's argument check refuses it before the body does.
    refuses(lambda: T.add_(expanded, plain),
            r"tile::add_: (argument 'x' is written, but several of its elements share one memory location|"
            r"x must be contiguous, got shape \(6, 8\) and strides \(0, 1\))")
    refuses(lambda: T.add_(plain.clone(), transposed), r"tile::add_: y must be contiguous")


# -- tile::softmax / tile::softmax_backward ---------------------------------------------------------


@case
def softmax_any_row_stride(device):
    for dtype in float_dtypes(device):
        for x in row_layouts(device, 5, 37, dtype) + [rand(device, 1, 5, dtype=dtype).t()]:  # last: one column
            close(T.softmax(x), torch.softmax(x.double(), -1))


@case
def softmax_refuses_strided_columns(device):
    T.softmax(rand(device, 6, 8))
    refuses(lambda: T.softmax(rand(device, 8, 6).t()),
            r"tile::softmax: rows of x must be contiguous \(x\.stride\(1\) == 1\), got strides \(1, 6\)")
    refuses(lambda: T.softmax(rand(device, 6, 1).expand(6, 8)),
            r"tile::softmax: rows of x must be contiguous \(x\.stride\(1\) == 1\), got strides \(1, 0\)")


@case
def softmax_backward_any_layout(device):
    for dtype in float_dtypes(device):
        rows, cols = 4, 21
        y = torch.softmax(rand(device, rows, cols, dtype=torch.float64), -1).to(dtype)
        for out in (y, y.t().contiguous().t(), spaced(y.flatten()).view(rows, cols)):
            for g in any_layouts(device, rows, cols, dtype):
                expected = torch._softmax_backward_data(g.double(), out.double(), 1, torch.float64)
                close(T.softmax_backward(g, out), expected, scale=4)


# -- tile::layer_norm / tile::layer_norm_backward ---------------------------------------------------


@case
def layer_norm_any_weight_and_bias_stride(device):
    """Reported: a strided weight was read as if contiguous, an expanded one past its storage."""
    for dtype in float_dtypes(device):
        x = rand(device, 6, 16, dtype=dtype)
        for w, b in zip(vectors(device, 16, dtype), reversed(vectors(device, 16, dtype))):
            out, mean, rstd = T.layer_norm(x, w, b, 1e-5)
            close(out, F.layer_norm(x.double(), (16,), w.double(), b.double(), 1e-5), scale=4)
            ref_mean, ref_rstd = ln_stats(x, 1e-5)
            close(mean, ref_mean)
            close(rstd, ref_rstd, scale=10)


@case
def layer_norm_any_row_stride(device):
    for dtype in float_dtypes(device):
        w, b = rand(device, 24, dtype=dtype), rand(device, 24, dtype=dtype)
        for x in row_layouts(device, 5, 24, dtype):
            out, _, _ = T.layer_norm(x, w, b, 1e-5)
            close(out, F.layer_norm(x.double(), (24,), w.double(), b.double(), 1e-5), scale=4)


@case
def layer_norm_weight_of_another_float_dtype(device):
    """Weight and bias are read in the accumulation dtype; the output has x's dtype."""
    for x_dtype, w_dtype in ((torch.float32, torch.float16), (torch.float16, torch.float32)):
        x, w, b = rand(device, 4, 16, dtype=x_dtype), rand(device, 16, dtype=w_dtype), rand(device, 16, dtype=w_dtype)
        out, _, _ = T.layer_norm(x, w, b, 1e-5)
        assert out.dtype == x_dtype
        close(out, F.layer_norm(x.double(), (16,), w.double(), b.double(), 1e-5), scale=4)


@case
def layer_norm_refuses_bad_layouts_and_dtypes(device):
    x, w, b = rand(device, 4, 16), rand(device, 16), rand(device, 16)
    T.layer_norm(x, w, b, 1e-5)
    refuses(lambda: T.layer_norm(rand(device, 16, 4).t(), w, b, 1e-5),
            r"tile::layer_norm: rows of x must be contiguous \(x\.stride\(1\) == 1\), got strides \(1, 4\)")
    # The old check counted elements only: a (2, 8) weight was read as 16 consecutive values.
    refuses(lambda: T.layer_norm(x, rand(device, 2, 8), b, 1e-5),
            r"tile::layer_norm: weight must be 1-D with x.shape\[1\] elements, got shape \(2, 8\)")
    refuses(lambda: T.layer_norm(x, w, torch.ones(16, dtype=torch.int32, device=device), 1e-5),
            r"tile::layer_norm: bias must be a floating-point tensor .*got torch.int32")


@case
def layer_norm_backward_any_layout(device):
    rows, cols, eps = 5, 16, 1e-5
    for dtype in float_dtypes(device):
        for x, g in zip(any_layouts(device, rows, cols, dtype), reversed(any_layouts(device, rows, cols, dtype))):
            for w in vectors(device, cols, dtype):
                b = rand(device, cols, dtype=dtype)
                mean, rstd = (s.to(stats_dtype(dtype)) for s in ln_stats(x, eps))
                gx, gw, gb = T.layer_norm_backward(g, x, w, spaced(mean), spaced(rstd))
                ref = grads(lambda x_, w_, b_: F.layer_norm(x_, (cols,), w_, b_, eps), (x, w, b), g)
                for got, want in zip((gx, gw, gb), ref):
                    close(got, want, scale=20)


# -- tile::rms_norm / tile::rms_norm_backward --------------------------------------------------------


@case
def rms_norm_any_layout(device):
    rows, cols, eps = 5, 16, 1e-6
    for dtype in float_dtypes(device):
        for x in any_layouts(device, rows, cols, dtype):
            for w in vectors(device, cols, dtype):
                out, rstd = T.rms_norm(x, w, eps)
                close(out, F.rms_norm(x.double(), (cols,), w.double(), eps), scale=4)
                close(rstd, torch.rsqrt(x.double().pow(2).mean(-1) + eps), scale=10)


@case
def rms_norm_backward_any_layout(device):
    rows, cols, eps = 5, 16, 1e-6
    for dtype in float_dtypes(device):
        for x, g in zip(any_layouts(device, rows, cols, dtype), reversed(any_layouts(device, rows, cols, dtype))):
            for w in vectors(device, cols, dtype):
                rstd = torch.rsqrt(x.double().pow(2).mean(-1) + eps).to(stats_dtype(dtype))
                gx, gw = T.rms_norm_backward(g, x, w, spaced(rstd))
                ref = grads(lambda x_, w_: F.rms_norm(x_, (cols,), w_, eps), (x, w), g)
                for got, want in zip((gx, gw), ref):
                    close(got, want, scale=20)


# -- tile::swiglu / tile::swiglu_backward -----------------------------------------------------------


def _swiglu(gate, up):
    return F.silu(gate) * up


@case
def swiglu_forward_and_backward(device):
    for dtype in float_dtypes(device):
        gate, up, g = (rand(device, 2, 3, 50, dtype=dtype) for _ in range(3))
        close(T.swiglu(gate, up), _swiglu(gate.double(), up.double()), scale=4)
        for got, want in zip(T.swiglu_backward(g, gate, up), grads(_swiglu, (gate, up), g)):
            close(got, want, scale=4)


@case
def swiglu_refuses_non_contiguous(device):
    gate, up = rand(device, 4, 6), rand(device, 4, 6)
    T.swiglu(gate, up)
    T.swiglu_backward(gate, gate, up)
    refuses(lambda: T.swiglu(rand(device, 6, 4).t(), up),
            r"tile::swiglu: gate must be contiguous, got shape \(4, 6\) and strides \(1, 4\)")
    refuses(lambda: T.swiglu(gate, rand(device, 4, 12)[:, ::2]),
            r"tile::swiglu: up must be contiguous, got shape \(4, 6\) and strides \(12, 2\)")
    refuses(lambda: T.swiglu(rand(device, 1, 6).expand(4, 6), up),
            r"tile::swiglu: gate must be contiguous, got shape \(4, 6\) and strides \(0, 1\)")
    ones = torch.ones((), device=device).expand(4, 6)  # the gradient of .sum()
    refuses(lambda: T.swiglu_backward(ones, gate, up),
            r"tile::swiglu_backward: grad_out must be contiguous, got shape \(4, 6\) and strides \(0, 0\)")
    refuses(lambda: T.swiglu_backward(gate, gate, rand(device, 6, 4).t()),
            r"tile::swiglu_backward: up must be contiguous")


# -- tile::cross_entropy / tile::cross_entropy_backward ---------------------------------------------


def _targets(device, rows, cols) -> list:
    """int64 contiguous, int64 strided, int32, expanded (one class for every row)."""
    t = torch.randint(0, cols, (rows,), device=device)
    return [t, spaced(t), t.to(torch.int32), torch.tensor([cols - 1], device=device).expand(rows)]


@case
def cross_entropy_any_layout(device):
    rows, cols = 6, 19
    for dtype in float_dtypes(device):
        for logits in any_layouts(device, rows, cols, dtype):
            for target in _targets(device, rows, cols):
                loss, lse = T.cross_entropy(logits, target)
                close(loss, F.cross_entropy(logits.double(), target.long(), reduction="none"), scale=10)
                close(lse, torch.logsumexp(logits.double(), -1), scale=10)


@case
def cross_entropy_backward_any_layout(device):
    rows, cols = 6, 19
    mean_grad = torch.full((1,), 1 / rows, device=device)
    for dtype in float_dtypes(device):
        for logits in any_layouts(device, rows, cols, dtype):
            lse = torch.logsumexp(logits.double(), -1).to(stats_dtype(dtype))
            for target in _targets(device, rows, cols):
                for grad_loss in (mean_grad.to(lse.dtype).expand(rows), spaced(rand(device, rows, dtype=lse.dtype))):
                    got = T.cross_entropy_backward(grad_loss, logits, target, spaced(lse))
                    (want,) = grads(lambda l_: F.cross_entropy(l_, target.long(), reduction="none"), (logits,),
                                    grad_loss)
                    close(got, want, scale=10)


@case
def cross_entropy_refuses_targets_that_are_not_class_indices(device):
    logits = rand(device, 4, 8)
    T.cross_entropy(logits, torch.zeros(4, dtype=torch.int64, device=device))
    for dtype in (torch.float32, torch.uint8, torch.int16, torch.bool):
        target = torch.zeros(4, device=device).to(dtype)
        refuses(lambda: T.cross_entropy(logits, target),
                rf"tile::cross_entropy: target must be int64 \(or int32\) class indices, got {dtype}")


# -- tile::matmul / tile::matmul_tma ----------------------------------------------------------------


@case(interpreter_loops=True)
def matmul_any_strides(device):
    M, K, N = 24, 40, 20
    for dtype in (torch.float32, *half_dtypes(device)):
        for a in any_layouts(device, M, K, dtype):
            for b in (rand(device, K, N, dtype=dtype), rand(device, N, K, dtype=dtype).t(),
                      rand(device, 1, N, dtype=dtype).expand(K, N)):
                close(T.matmul(a, b), a.double() @ b.double(), tol=MATMUL_TOL)


@case
def matmul_refuses_dtypes_it_cannot_multiply(device):
    a = rand(device, 8, 8)
    refuses(lambda: T.matmul(a, a.half()), r"tile::matmul: b has dtype torch.float16 but a has torch.float32")
    for dtype in (torch.float64, torch.int32):
        x = rand(device, 8, 8, dtype=dtype)
        refuses(lambda: T.matmul(x, x), rf"tile::matmul: a must be float16, bfloat16 or float32, got {dtype}")


@case(interpreter_loops=True)
def matmul_tma_any_row_stride(device):
    M, K, N = 32, 16, 32  # TMA: rows of 16-byte multiples
    for dtype in half_dtypes(device):
        for a in (rand(device, M, K, dtype=dtype), rand(device, M, K + 8, dtype=dtype)[:, :K]):
            for b in (rand(device, K, N, dtype=dtype), rand(device, K, N + 8, dtype=dtype)[:, 8:]):
                close(T.matmul_tma(a, b), a.double() @ b.double(), tol=MATMUL_TOL)


@case
def matmul_tma_refuses_transposed_and_expanded(device):
    a, b = rand(device, 16, 16, dtype=torch.float16), rand(device, 16, 16, dtype=torch.float16)
    refuses(lambda: T.matmul_tma(a.t(), b),
            r"tile::matmul_tma: rows of a must be contiguous \(a\.stride\(1\) == 1\), got strides \(1, 16\)")
    refuses(lambda: T.matmul_tma(a, b.t()),
            r"tile::matmul_tma: rows of b must be contiguous \(b\.stride\(1\) == 1\), got strides \(1, 16\)")
    refuses(lambda: T.matmul_tma(a[:1].expand(16, 16), b),
            r"tile::matmul_tma: a must not be expanded along its rows \(stride 0\) .*got strides \(0, 1\)")


# -- tile::layer_norm_pdl ---------------------------------------------------------------------------


@case
def layer_norm_pdl_any_row_and_vector_stride(device):
    for dtype in float_dtypes(device):
        for x in row_layouts(device, 5, 16, dtype):
            for w, b in zip(vectors(device, 16, dtype), reversed(vectors(device, 16, dtype))):
                close(T.layer_norm_pdl(x, w, b, 1e-5),
                      F.layer_norm(x.double(), (16,), w.double(), b.double(), 1e-5), scale=4)


@case
def layer_norm_pdl_refuses_bad_layouts_and_dtypes(device):
    x, w, b = rand(device, 4, 16), rand(device, 16), rand(device, 16)
    T.layer_norm_pdl(x, w, b, 1e-5)
    refuses(lambda: T.layer_norm_pdl(rand(device, 16, 4).t(), w, b, 1e-5),
            r"tile::layer_norm_pdl: rows of x must be contiguous \(x\.stride\(1\) == 1\), got strides \(1, 4\)")
    refuses(lambda: T.layer_norm_pdl(x, torch.ones(16, dtype=torch.int64, device=device), b, 1e-5),
            r"tile::layer_norm_pdl: weight must be a floating-point tensor .*got torch.int64")


# -- tile::sum_cooperative --------------------------------------------------------------------------


@case
def sum_cooperative_float_dtypes(device):
    for dtype in float_dtypes(device):
        for x in (rand(device, 3000, dtype=dtype), rand(device, 7, 300, dtype=dtype)):
            out = T.sum_cooperative(x)
            assert out.dtype == dtype and out.shape == ()
            close(out, x.double().sum(), scale=4)


@case
def sum_cooperative_refuses_non_contiguous(device):
    T.sum_cooperative(rand(device, 6, 8))
    for x, strides in ((rand(device, 8, 6).t(), r"\(1, 6\)"), (rand(device, 6, 16)[:, ::2], r"\(16, 2\)"),
                       (rand(device, 1, 8).expand(6, 8), r"\(0, 1\)")):
        refuses(lambda: T.sum_cooperative(x),
                rf"tile::sum_cooperative: x must be contiguous, got shape \(6, 8\) and strides {strides}")


# -- dtypes, every op -------------------------------------------------------------------------------


def _op_calls(device) -> list:
    """(op, the argument its body checks first, call(dtype)): the call with its floating-point tensors in
    dtype (class indices stay int64)."""
    def r(*shape, dt):
        return rand(device, *shape, dtype=dt)

    target = torch.tensor([1, 0, 3, 2], device=device)
    return [
        ("tile::add", "x", lambda dt: T.add(r(8, dt=dt), r(8, dt=dt))),
        ("tile::add_", "x", lambda dt: T.add_(r(8, dt=dt), r(8, dt=dt))),
        ("tile::softmax", "x", lambda dt: T.softmax(r(4, 8, dt=dt))),
        ("tile::softmax_backward", "out", lambda dt: T.softmax_backward(r(4, 8, dt=dt), r(4, 8, dt=dt))),
        ("tile::layer_norm", "x", lambda dt: T.layer_norm(r(4, 8, dt=dt), r(8, dt=dt), r(8, dt=dt), 1e-5)),
        ("tile::layer_norm_backward", "x",
         lambda dt: T.layer_norm_backward(r(4, 8, dt=dt), r(4, 8, dt=dt), r(8, dt=dt), r(4, dt=dt), r(4, dt=dt))),
        ("tile::rms_norm", "x", lambda dt: T.rms_norm(r(4, 8, dt=dt), r(8, dt=dt), 1e-6)),
        ("tile::rms_norm_backward", "x",
         lambda dt: T.rms_norm_backward(r(4, 8, dt=dt), r(4, 8, dt=dt), r(8, dt=dt), r(4, dt=dt))),
        ("tile::swiglu", "gate", lambda dt: T.swiglu(r(4, 8, dt=dt), r(4, 8, dt=dt))),
        ("tile::swiglu_backward", "gate", lambda dt: T.swiglu_backward(r(4, 8, dt=dt), r(4, 8, dt=dt), r(4, 8, dt=dt))),
        ("tile::cross_entropy", "logits", lambda dt: T.cross_entropy(r(4, 8, dt=dt), target)),
        ("tile::cross_entropy_backward", "logits",
         lambda dt: T.cross_entropy_backward(r(4, dt=dt), r(4, 8, dt=dt), target, r(4, dt=dt))),
        ("tile::matmul", "a", lambda dt: T.matmul(r(8, 8, dt=dt), r(8, 8, dt=dt))),
        ("tile::matmul_tma", "a", lambda dt: T.matmul_tma(r(16, 16, dt=dt), r(16, 16, dt=dt))),
        ("tile::layer_norm_pdl", "x", lambda dt: T.layer_norm_pdl(r(4, 8, dt=dt), r(8, dt=dt), r(8, dt=dt), 1e-5)),
        ("tile::sum_cooperative", "x", lambda dt: T.sum_cooperative(r(4, 8, dt=dt))),
    ]


@case
def float_ops_refuse_integers_and_bool(device):
    """As torch.softmax, F.layer_norm... do (integer softmax used to return zeros)."""
    for op, arg, call in _op_calls(device):
        if op.startswith("tile::add"):
            continue  # add computes them (above)
        for dtype in (torch.int64, torch.int32, torch.bool):
            refuses(lambda: call(dtype), dtype_refusal(op, arg, dtype))


@case
def every_op_refuses_fp8(device):
    for op, arg, call in _op_calls(device):
        for dtype in EXOTIC:
            refuses(lambda: call(dtype), dtype_refusal(op, arg, dtype))


@case
def every_op_refuses_complex(device):
    """The body's check refuses complex (ValueError), else the launch that would take it (CallError)."""
    for op, arg, call in _op_calls(device):
        refuses(lambda: call(torch.complex64), dtype_refusal(op, arg, torch.complex64), exc=(TypeError, ValueError))
