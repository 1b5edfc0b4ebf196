"""GPU tests (skipped without CUDA): kernels with tuple-typed parameters on the
native C++ launch path, against torch and against Triton's own launcher (the
same ``kernel[grid](...)`` outside any op: same cubin, bitwise the same result).

The ops are in tuple_param_ops.py: nested tuples mixing tensors, None, ints,
floats and a ``tl.constexpr`` leaf; namedtuples; a store through a tuple
member; descriptors in a tuple (sm_90+); an autotuned in-place update through
a tuple member.

Tolerances against torch (computed in float64): the output rounding of the
dtype (the kernels compute in the dtype of x, float32 for the arithmetic of
float16 and bfloat16 after promotion with the float32 scalars).
"""

import pytest
import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

import torch_tile as tt
from torch_tile.frontends.triton import autotune
from torch_tile import _testing

import tuple_param_ops as T
from conftest import requires_cuda, requires_sm90
from triton_reference import device_capability

pytestmark = requires_cuda

requires_tma = requires_sm90("tensor descriptors (TMA)")

TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _variant_cubin(op, args) -> bytes:
    """The cubin of the variant the native path launches for op(*args) (its only launch)."""
    plan = op.trace(*args)
    words = _testing.specialization_keys(plan, tuple(args))[0]
    compiled, _ = tt.compile_variant(plan.launches[0].kernel, words, device_capability())
    return compiled.asm["cubin"]


def _x(n, offset=0, dtype=torch.float32):
    return (torch.randn(n + offset, device="cuda") * 4).to(dtype)[offset:]


AFFINE_CASES = [(1, 0, 1), (1000, 0, 3), (4096, 1, 1), (300, 3, 16), (5000, 0, 2)]


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("n, offset, step", AFFINE_CASES + [(0, 0, 2)])
def test_affine_matches_torch(dtype, n, offset, step):
    x = _x(n, offset, dtype)
    out = T.affine(x, 1.5, -0.25, step)
    assert out.dtype == dtype and out.shape == (n * step,)
    tol = TOL[dtype]
    torch.testing.assert_close(out.double(), T.affine_reference(x, 1.5, -0.25, step), atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("n, offset, step", AFFINE_CASES)
def test_affine_as_tritons_launcher(dtype, n, offset, step):
    x = _x(n, offset, dtype)
    ours = T.affine(x, 1.5, -0.25, step)
    theirs = torch.zeros_like(ours)
    compiled = T.affine_kernel[(triton.cdiv(n, T.BLOCK),)](*T.affine_arguments(x, theirs, 1.5, -0.25, step),
                                                           BLOCK=T.BLOCK)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    assert _variant_cubin(T.affine, (x, 1.5, -0.25, step)) == compiled.asm["cubin"]


def test_affine_specializations_alternate():
    """Calls alternating between the variants of a tuple leaf's alignment, == 1 and % 16, twice over."""
    cases = [(1000, 0, 3), (1000, 1, 3), (1000, 0, 1), (1024, 0, 16), (1024, 1, 1)]
    inputs = [(_x(n, offset), step) for n, offset, step in cases]
    for _ in range(2):
        for x, step in inputs:
            torch.testing.assert_close(T.affine(x, 2.0, 1.0, step).double(), T.affine_reference(x, 2.0, 1.0, step),
                                       atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("shape, columns", [((5, 64), 40), ((3, 17), 17), ((1, 1), 1), ((64, 1024), 1000)])
def test_copy_rows_as_torch_and_tritons_launcher(dtype, shape, columns):
    x = torch.randn(shape, device="cuda").to(dtype)[:, :columns]
    ours = T.copy_rows(x)
    torch.testing.assert_close(ours, x, rtol=0, atol=0)
    theirs = torch.empty_like(ours)
    compiled = T.copy_rows_kernel[(x.shape[0],)](T.Strided(x, x.stride(0)), T.Strided(theirs, theirs.stride(0)),
                                                 x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    assert _variant_cubin(T.copy_rows, (x,)) == compiled.asm["cubin"]


@pytest.mark.parametrize("n", [1, 1000, 4096])
def test_scale_into_writes_through_a_tuple_member(n):
    x = torch.randn(n, device="cuda")
    y = torch.full((n,), 7.0, device="cuda")
    version = y._version
    T.scale_into(x, y)
    torch.testing.assert_close(y, 2 * x, rtol=0, atol=0)
    assert y._version > version  # the declared mutation is visible to autograd's version counter


def test_an_undeclared_write_through_a_tuple_member_is_refused():
    x, y = torch.randn(100, device="cuda"), torch.zeros(100, device="cuda")
    with pytest.raises(tt.TraceError, match=r"scale_pair_kernel\(pair\[1\]\) writes argument 'y'"):
        T.scale_into_undeclared(x, y)
    assert torch.count_nonzero(y) == 0  # refused before anything ran


@requires_tma
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("shape", [(64, 96), (100, 64), (40, 72), (32, 32)])  # rows of 16-byte multiples (TMA)
def test_add_desc_as_torch_and_tritons_launcher(dtype, shape):
    a = torch.randn(shape, device="cuda").to(dtype)
    b = torch.randn(shape, device="cuda").to(dtype)
    ours = T.add_desc(a, b)
    torch.testing.assert_close(ours, a + b, rtol=0, atol=0)
    c = torch.empty_like(a)
    descs = [TensorDescriptor.from_tensor(t, [T.DESC_BLOCK, T.DESC_BLOCK]) for t in (a, b, c)]
    grid = (triton.cdiv(shape[0], T.DESC_BLOCK), triton.cdiv(shape[1], T.DESC_BLOCK))
    args = ((descs[0], (descs[1], descs[2])),)
    if tuple(map(int, triton.__version__.split(".")[:2])) >= (3, 8):
        compiled = T.add_desc_kernel[grid](*args, BM=T.DESC_BLOCK, BN=T.DESC_BLOCK)
        torch.testing.assert_close(ours, c, rtol=0, atol=0)
    else:  # Triton 3.6's launcher cannot pass descriptors inside tuples; its compiler makes the binary
        compiled = T.add_desc_kernel.warmup(*args, BM=T.DESC_BLOCK, BN=T.DESC_BLOCK, grid=grid)
    assert _variant_cubin(T.add_desc, (a, b)) == compiled.asm["cubin"]


def test_autotuning_leaves_a_written_tuple_member_untouched():
    """The timing runs store to a clone of y (reached through the tuple), not to the caller's y."""
    x = torch.randn(3001, device="cuda")
    y = torch.randn(3001, device="cuda")
    expected = y + x
    before = autotune.benchmarks_run
    T.accumulate(x, y)
    assert autotune.benchmarks_run == before + 1  # the configs were timed, on clones
    torch.testing.assert_close(y, expected, rtol=0, atol=0)
    T.accumulate(x, y)  # the choice is kept: no more timing
    assert autotune.benchmarks_run == before + 1
    torch.testing.assert_close(y, expected + x, rtol=0, atol=0)
