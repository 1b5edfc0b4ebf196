"""GPU tests (skipped without CUDA): kernels whose launches need CUDA launch
attributes, through ``torch.ops.*`` on the native C++ launch path, against torch.

* ``tile::layer_norm_pdl``: programmatic dependent launch (sm_90+), alone, back
  to back many times, and captured in a CUDA graph.
* ``tile::sum_cooperative``: one cooperative launch with a grid barrier.
* Test-local ops (launch_kernel_ops.py): ``num_ctas=2`` clusters (sm_90+), a
  matmul with > 48 KB of dynamic shared memory, and a cooperative launch too
  large to be co-resident, which must fail cleanly.

Tolerances: results are compared in float64 with torch; each bound is stated
where it is used (output rounding of the dtype plus float32 accumulation).
"""

import pytest
import torch
import torch.nn.functional as F
import triton

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile.trace.expr import evaluate
from torch_tile.frontends.triton.compile import _compile_callback
from torch_tile import _testing

import launch_kernel_ops as L
from conftest import requires_cuda, requires_sm90
from triton_reference import device_capability

pytestmark = requires_cuda

requires_pdl_and_clusters = requires_sm90("programmatic dependent launch and CTA clusters")

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _entries(op, *args) -> tuple[dict, list]:
    """The op's plan for ``args`` and, per launch, the launch metadata of the variant the C++
    launcher runs for them (from the disk cache the launcher filled, or compiled again)."""
    plan = op.trace(*args)
    keys = _testing.specialization_keys(plan, args)
    return plan, [_compile_callback(step.kernel, words, device_capability())
                  for step, words in zip(plan.launches, keys)]


def _grid(step, args) -> list:
    return [evaluate(e.code, list(args), list(args)) for e in step.grid]


def _still_works():
    x = torch.randn(100, device="cuda")
    torch.testing.assert_close(torch.ops.tile.add(x, x), x + x)
    torch.testing.assert_close(x.sum(), x.double().sum().float())
    torch.cuda.synchronize()  # no sticky CUDA error


# -- tile::layer_norm_pdl ---------------------------------------------------------------------------

# Output rounding of the dtype dominates (statistics are float32, float64 for float64).
LN_TOL = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float64: 1e-9}


def _ref_layer_norm(x, w, b, eps=1e-5):
    return F.layer_norm(x.double(), (x.shape[1],), w.double(), b.double(), eps)


def _check_layer_norm(out, x, w, b, eps=1e-5):
    assert out.dtype == x.dtype and out.shape == x.shape
    tol = LN_TOL[x.dtype]
    torch.testing.assert_close(out.double(), _ref_layer_norm(x, w, b, eps), atol=tol, rtol=tol)


@requires_pdl_and_clusters
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(1, 7), (129, 700), (300, 128), (64, 4096), (3, 8192)])
def test_layer_norm_pdl(dtype, shape):
    x = torch.randn(shape, device="cuda", dtype=dtype) * 2 + 0.5
    w = torch.randn(shape[1], device="cuda", dtype=dtype)
    b = torch.randn(shape[1], device="cuda", dtype=dtype)
    _check_layer_norm(torch.ops.tile.layer_norm_pdl(x, w, b, 1e-5), x, w, b)


@requires_pdl_and_clusters
def test_layer_norm_pdl_strided_and_eps():
    base = torch.randn(64, 1200, device="cuda")
    x = base[::2, :1000]  # row stride 2400
    w, b = torch.randn(2000, device="cuda")[::2], torch.randn(1000, device="cuda")
    _check_layer_norm(torch.ops.tile.layer_norm_pdl(x, w, b, 1e-5), x, w, b)
    small = torch.randn(16, 256, device="cuda") * 1e-3
    _check_layer_norm(torch.ops.tile.layer_norm_pdl(small, w[:256], b[:256], 0.1), small, w[:256], b[:256], 0.1)


@requires_pdl_and_clusters
def test_layer_norm_pdl_variants():
    x = torch.randn(32, 512, device="cuda")
    w, b = torch.randn(512, device="cuda"), torch.randn(512, device="cuda")
    torch.ops.tile.layer_norm_pdl(x, w, b, 1e-5)
    plan, (stats, apply) = _entries(K.layer_norm_pdl, x, w, b, 1e-5)
    assert len(plan.launches) == 2
    assert stats["launch_pdl"] is False and apply["launch_pdl"] is True


@requires_pdl_and_clusters
def test_layer_norm_pdl_back_to_back():
    # Many calls queued without synchronising. Each input has other statistics than the one
    # before, and the stats scratch of a call is typically the block the previous call freed:
    # an apply launch reading its stats before the stats launch finished would see stale ones.
    # Every other call takes the previous PDL output directly (a plain launch after a PDL one).
    n_rows, n_cols = 256, 1024
    w = torch.randn(n_cols, device="cuda")
    b = torch.randn(n_cols, device="cuda")
    y = torch.randn(n_rows, n_cols, device="cuda")
    inputs, outputs = [], []
    for i in range(300):
        x = y if i % 2 else y * (1 + i % 7) + 3.0 * (i % 5)
        y = torch.ops.tile.layer_norm_pdl(x, w, b, 1e-5)
        inputs.append(x)
        outputs.append(y)
    torch.cuda.synchronize()
    for x, out in zip(inputs, outputs):
        _check_layer_norm(out, x, w, b)


@requires_pdl_and_clusters
def test_layer_norm_pdl_in_cuda_graph():
    n_rows, n_cols = 128, 768
    x = torch.randn(n_rows, n_cols, device="cuda")
    w = torch.randn(n_cols, device="cuda")
    b = torch.randn(n_cols, device="cuda")
    steps = 8

    def chain(x):
        inputs, outputs, y = [], [], x
        for i in range(steps):
            inp = y * 2 + i if i % 2 == 0 else y
            y = torch.ops.tile.layer_norm_pdl(inp, w, b, 1e-5)
            inputs.append(inp)
            outputs.append(y)
        return inputs, outputs

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (trace, compile) outside capture, as torch recommends
        chain(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    counters = tt.runtime_counters()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        inputs, outputs = chain(x)
    for trial in range(3):
        x.copy_(torch.randn_like(x) * (trial + 1) + trial)
        for _ in range(10):  # replays back to back; each recomputes the same chain from x
            g.replay()
        torch.cuda.synchronize()
        for inp, out in zip(inputs, outputs):
            _check_layer_norm(out, inp, w, b)
    assert tt.runtime_counters()["compiles"] == counters["compiles"]


# -- tile::sum_cooperative --------------------------------------------------------------------------

SUM_SIZES = [1, 7, 1023, 1024, 1025, 132 * 1024 - 1, 132 * 1024 + 1, 1_000_003, 1 << 22]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("n", SUM_SIZES)
def test_sum_cooperative_exact_on_integers(dtype, n):
    # Values in [-2, 2] and n <= 2**22: every partial sum is an integer below 2**24, exact in
    # float32 in any order, so the result must equal torch's exact sum rounded once to the dtype.
    x = torch.randint(-2, 3, (n,), device="cuda").to(dtype)
    out = torch.ops.tile.sum_cooperative(x)
    assert out.dtype == dtype and out.shape == () and out.device == x.device
    expected = x.double().sum().to(dtype)
    assert torch.equal(out, expected), (n, out.item(), expected.item())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (1000,), (37, 129), (1_000_003,), (64, 4096, 4)])
def test_sum_cooperative_matches_torch(dtype, shape):
    x = torch.randn(shape, device="cuda", dtype=dtype)
    out = torch.ops.tile.sum_cooperative(x)
    ref = x.double().sum()
    # float32 accumulation: at most ~50 roundings on any element's path (strided loop, block sum,
    # partials), so 3e-6 * sum|x| bounds it; then one rounding to the dtype.
    acc_err = (1e-12 if dtype == torch.float64 else 3e-6) * x.double().abs().sum()
    out_err = torch.finfo(dtype).eps * ref.abs()
    assert out.dtype == dtype and out.shape == ()
    assert (out.double() - ref).abs().item() <= (acc_err + out_err).item(), (out.item(), ref.item())


def test_sum_cooperative_empty():
    out = torch.ops.tile.sum_cooperative(torch.empty(0, 3, device="cuda"))
    assert out.shape == () and out.item() == 0.0


def test_sum_cooperative_back_to_back():
    # Every call zeroes its own barrier counter; queued calls must not see each other's.
    xs = [torch.randint(-2, 3, (200_000 + 997 * i,), device="cuda").float() for i in range(100)]
    outs = [torch.ops.tile.sum_cooperative(x) for x in xs]
    torch.cuda.synchronize()
    for x, out in zip(xs, outs):
        assert out.item() == x.double().sum().item()


def test_sum_cooperative_grid_is_one_program_per_sm():
    x = torch.randn(1 << 22, device="cuda")
    torch.ops.tile.sum_cooperative(x)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    plan, (entry,) = _entries(K.sum_cooperative, x)
    assert _grid(plan.launches[0], (x,)) == [min(sms, triton.cdiv(x.numel(), 1024)), 1, 1]
    assert entry["launch_cooperative_grid"] is True


def test_cooperative_launch_too_large_fails_cleanly():
    like = torch.empty(1, device="cuda")
    op = torch.ops.tt_launch_test.cooperative_program_ids
    # A grid that can be co-resident launches (and the op is right) ...
    assert torch.equal(op(like, 64), torch.arange(64, dtype=torch.int32, device="cuda"))
    # ... one that cannot is refused by the driver: a Python exception naming the op and kernel.
    with pytest.raises(RuntimeError, match=r"tt_launch_test::cooperative_program_ids") as info:
        op(like, L.TOO_MANY_PROGRAMS)
        torch.cuda.synchronize()
    assert not isinstance(info.value, tt.TraceError)
    assert "program_id_kernel" in str(info.value)
    _still_works()
    assert torch.equal(op(like, 64), torch.arange(64, dtype=torch.int32, device="cuda"))
    torch.testing.assert_close(torch.ops.tile.sum_cooperative(torch.ones(3, device="cuda")),
                               torch.tensor(3.0, device="cuda"))


# -- num_ctas=2 ----------------------------------------------------------------------------------------


@requires_pdl_and_clusters
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("n", [1, 2047, 2048, 2049, 1_000_003])
def test_affine_cluster(dtype, n):
    x = torch.randn(n, device="cuda", dtype=dtype)
    out = torch.ops.tt_launch_test.affine_cluster(x)
    # 2x is exact, so x * 2 + 1 rounds once in both implementations: equal bit for bit.
    torch.testing.assert_close(out, x * 2 + 1, rtol=0, atol=0)
    # and the same as Triton's own launcher running the kernel with num_ctas=2
    theirs = torch.empty_like(x)
    L.affine_kernel[(triton.cdiv(n, L.CLUSTER_BLOCK),)](x, theirs, n, BLOCK=L.CLUSTER_BLOCK, num_warps=4, num_ctas=2)
    torch.testing.assert_close(out, theirs, rtol=0, atol=0)


@requires_pdl_and_clusters
def test_affine_cluster_variant_has_two_ctas():
    x = torch.randn(10_000, device="cuda")
    torch.ops.tt_launch_test.affine_cluster(x)
    plan, (entry,) = _entries(L.affine_cluster, x)
    assert entry["num_ctas"] == 2
    assert _grid(plan.launches[0], (x,)) == [triton.cdiv(10_000, L.CLUSTER_BLOCK), 1, 1]


# -- > 48 KB of dynamic shared memory ---------------------------------------------------------------

# tl.dot of fp32 uses TF32 tensor cores (Triton's default), as test_gpu_ops.test_matmul.
MM_TOL = {torch.float32: 2e-2, torch.float16: 2e-2, torch.bfloat16: 1e-1}


def _check_matmul(out, a, b):
    k = a.shape[1]
    assert out.dtype == a.dtype and out.shape == (a.shape[0], b.shape[1])
    torch.testing.assert_close(out.double(), a.double() @ b.double(), atol=MM_TOL[a.dtype] * k**0.5, rtol=1e-2)


@pytest.mark.parametrize("dtype", list(L.SMEM_CONFIGS))
@pytest.mark.parametrize("mnk", [(256, 128, 192), (200, 144, 80), (512, 384, 1024)])
def test_matmul_big_smem(dtype, mnk):
    # N and K are multiples of 16 elements, so Triton pipelines the loads: ~96 KB of shared memory.
    m, n, k = mnk
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    _check_matmul(torch.ops.tt_launch_test.matmul_big_smem(a, b), a, b)
    _, (entry,) = _entries(L.matmul_big_smem, a, b)
    assert entry["shared"] > 49152, entry["shared"]
    props = torch.cuda.get_device_properties(a.device)
    limit = getattr(props, "shared_memory_per_block_optin", None)
    if limit is not None:
        assert entry["shared"] <= limit


@pytest.mark.parametrize("dtype", list(L.SMEM_CONFIGS))
def test_matmul_big_smem_unaligned(dtype):
    a = torch.randn(130, 70, device="cuda", dtype=dtype)
    b = torch.randn(70, 129, device="cuda", dtype=dtype)
    _check_matmul(torch.ops.tt_launch_test.matmul_big_smem(a, b), a, b)
