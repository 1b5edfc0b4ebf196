"""CPU tests: kernels that need CUDA launch attributes.

* ``tile::layer_norm_pdl`` (two launches, the second with ``launch_pdl=True``)
  and ``tile::sum_cooperative`` (one ``launch_cooperative_grid=True`` launch
  with a grid barrier), and the test-local ops of launch_kernel_ops.py
  (``num_ctas=2``; > 48 KB of dynamic shared memory).
* On CPU tensors, through Triton's interpreter, against torch. The interpreter
  cannot run PDL's ``griddepcontrol`` inline assembly and runs programs one
  after another (a spinning grid barrier would never open), so those ops launch
  CPU variants (see their modules); their results must still be exact.
* Compiled for sm_90 without a GPU: the variants the CUDA path would launch
  carry the launch options (metadata read by the C++ launcher) and the
  instructions that go with them (PTX).
"""

import pytest
import torch
import torch.nn.functional as F

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile.trace.expr import evaluate
from torch_tile.frontends.triton.compile import _compile_callback
from torch_tile.frontends.triton.kernels import launch_config
from torch_tile import _testing

import launch_kernel_ops as L
from conftest import requires_interpreter_scalar_loops

CUDA = torch.device("cuda")
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float16: dict(atol=2e-3, rtol=2e-3),
       torch.float64: dict(atol=1e-10, rtol=1e-10)}


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _variants(op, *args, device=CUDA) -> list:
    """(launch step, launch metadata as the C++ launcher receives it, Triton CompiledKernel) per launch
    of the plan the body makes for ``device`` (default: the CUDA path), compiled for sm_90."""
    plan = op.trace(*args, device=device)
    keys = _testing.specialization_keys(plan, args)
    out = []
    for step, words in zip(plan.launches, keys):
        entry = _compile_callback(step.kernel, words, 90)
        compiled, _ = tt.compile_variant(step.kernel, words, 90)
        out.append((step, entry, compiled))
    return out


def _grid(step, args) -> list:
    """The launch's grid evaluated for ``args`` (the op's inputs)."""
    return [evaluate(e.code, list(args), list(args)) for e in step.grid]


def _ptx_lines(compiled) -> list:
    return [line.strip() for line in compiled.asm["ptx"].splitlines()]


def _index(lines, needle) -> int:
    return next(i for i, line in enumerate(lines) if needle in line)


# -- tile::layer_norm_pdl ---------------------------------------------------------------------------


def _ref_layer_norm(x, w, b, eps):
    return F.layer_norm(x.double(), (x.shape[1],), w.double(), b.double(), eps)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (5, 37), (16, 256), (3, 1000)])
def test_layer_norm_pdl_matches_torch(dtype, shape):
    x = torch.randn(shape, dtype=dtype) * 3 + 1
    w = torch.randn(shape[1], dtype=dtype)
    b = torch.randn(shape[1], dtype=dtype)
    out = torch.ops.tile.layer_norm_pdl(x, w, b, 1e-5)
    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(out.double(), _ref_layer_norm(x, w, b, 1e-5), **TOL[dtype])


def test_layer_norm_pdl_eps_and_default():
    x = torch.randn(4, 64) * 1e-3  # variance ~1e-6: eps matters
    w, b = torch.randn(64), torch.randn(64)
    torch.testing.assert_close(torch.ops.tile.layer_norm_pdl(x, w, b, 0.1).double(), _ref_layer_norm(x, w, b, 0.1),
                               **TOL[torch.float32])
    torch.testing.assert_close(torch.ops.tile.layer_norm_pdl(x, w, b).double(), _ref_layer_norm(x, w, b, 1e-5),
                               **TOL[torch.float32])


def test_layer_norm_pdl_strided_inputs():
    base = torch.randn(6, 100)
    x = base[::2, :50]  # row stride 200, rows contiguous
    w_full, b_full = torch.randn(100), torch.randn(150)
    w, b = w_full[::2], b_full[::3]  # strided vectors
    out = torch.ops.tile.layer_norm_pdl(x, w, b, 1e-5)
    assert out.is_contiguous()
    torch.testing.assert_close(out.double(), _ref_layer_norm(x, w, b, 1e-5), **TOL[torch.float32])


def test_layer_norm_pdl_no_rows():
    out = torch.ops.tile.layer_norm_pdl(torch.empty(0, 8), torch.ones(8), torch.zeros(8), 1e-5)
    assert out.shape == (0, 8)


@pytest.mark.parametrize("args, message", [
    ((torch.randn(8), torch.ones(8), torch.zeros(8)), "x must be 2-D"),
    ((torch.randn(4, 8), torch.ones(7), torch.zeros(8)), "weight must be 1-D with x.shape\\[1\\] elements"),
    ((torch.randn(4, 8), torch.ones(8), torch.zeros(4, 2)), "bias must be 1-D"),
    ((torch.randn(8, 4).t(), torch.ones(8), torch.zeros(8)), "rows of x must be contiguous"),
    ((torch.ones(4, 8, dtype=torch.int32), torch.ones(8), torch.zeros(8)), "x must be a floating-point"),
    ((torch.randn(4, 0), torch.ones(0), torch.zeros(0)), "cannot normalise rows of 0 elements"),
])
def test_layer_norm_pdl_rejects_bad_input(args, message):
    with pytest.raises(ValueError, match="tile::layer_norm_pdl: " + message):
        torch.ops.tile.layer_norm_pdl(*args, 1e-5)


def test_layer_norm_pdl_opcheck():
    x, w, b = torch.randn(4, 16), torch.randn(16), torch.randn(16)
    torch.library.opcheck(torch.ops.tile.layer_norm_pdl.default, (x, w, b, 1e-5),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static",
                                      "test_aot_dispatch_dynamic"))


def test_layer_norm_pdl_cuda_variants_carry_pdl():
    x, w, b = torch.randn(64, 300), torch.randn(300), torch.randn(300)
    (stats_step, stats, stats_bin), (apply_step, apply, apply_bin) = _variants(K.layer_norm_pdl, x, w, b, 1e-5)
    assert stats["name"] == "layer_norm_stats_kernel" and apply["name"] == "layer_norm_apply_kernel"
    # Only the dependent (second) launch gets the programmatic-stream-serialization attribute: the
    # stats launch must wait for the work before it in full, as any launch.
    assert stats["launch_pdl"] is False and apply["launch_pdl"] is True
    assert not stats["launch_cooperative_grid"] and not apply["launch_cooperative_grid"]
    assert _grid(stats_step, (x,)) == _grid(apply_step, (x,)) == [64, 1, 1]
    # The stats kernel signals its dependents after its stores; the dependent loads x/weight/bias
    # first, then waits, and reads the statistics only after the wait.
    lines = _ptx_lines(stats_bin)
    signal = _index(lines, "griddepcontrol.launch_dependents")
    stores = [i for i, line in enumerate(lines) if "st.global" in line]
    assert stores and max(stores) < signal
    lines = _ptx_lines(apply_bin)
    wait = _index(lines, "griddepcontrol.wait")
    loads = [i for i, line in enumerate(lines) if "ld.global" in line]
    assert loads[0] < wait < loads[-1]
    assert not any("griddepcontrol" in line for line in lines[wait + 1:])


def test_layer_norm_pdl_cpu_plan_has_no_pdl():
    # The interpreter path: no griddepcontrol in the kernels, no launch_pdl option.
    x, w, b = torch.randn(4, 8), torch.randn(8), torch.randn(8)
    plan = K.layer_norm_pdl.trace(x, w, b, 1e-5)
    for step in plan.launches:
        config = launch_config(step.config)
        assert config.statics["USE_GDC"] is False
        assert not config.options.get("launch_pdl", False)


# -- tile::sum_cooperative --------------------------------------------------------------------------


@requires_interpreter_scalar_loops  # the strided loop runs to a runtime bound (see conftest)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("n", [1, 1000, 1024, 1025, 4 * 1024, 4 * 1024 + 1, 3 * 4 * 1024 + 17])
def test_sum_cooperative_exact_on_integers(dtype, n):
    # Small integers: every partial sum is exact in float32, whatever the order, so the result
    # must equal torch's exactly (the same exact value rounded once to the dtype).
    x = torch.randint(-3, 4, (n,)).to(dtype)
    out = torch.ops.tile.sum_cooperative(x)
    assert out.dtype == dtype and out.shape == ()
    assert torch.equal(out, torch.sum(x.double()).to(dtype)), (out, torch.sum(x.double()))


@requires_interpreter_scalar_loops
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("shape", [(1,), (7, 13), (3, 2000), (2, 3, 4, 1111)])
def test_sum_cooperative_matches_torch(dtype, shape):
    x = torch.randn(shape, dtype=dtype)
    out = torch.ops.tile.sum_cooperative(x)
    ref = x.double().sum()
    # float32 accumulation (float64 for float64), then one rounding to the dtype.
    acc_err = (1e-12 if dtype == torch.float64 else 1e-6) * x.double().abs().sum()
    out_err = torch.finfo(dtype).eps * ref.abs()
    assert out.dtype == dtype and out.shape == ()
    assert (out.double() - ref).abs() <= acc_err + out_err, (out, ref)


def test_sum_cooperative_empty():
    out = torch.ops.tile.sum_cooperative(torch.empty(0, 5))
    assert out.shape == () and out.item() == 0.0


@pytest.mark.parametrize("x, message", [
    (torch.arange(10), "x must be a floating-point"),
    (torch.randn(4, 6).t(), "x must be contiguous"),
])
def test_sum_cooperative_rejects_bad_input(x, message):
    with pytest.raises(ValueError, match="tile::sum_cooperative: " + message):
        torch.ops.tile.sum_cooperative(x)


@requires_interpreter_scalar_loops
def test_sum_cooperative_opcheck():
    torch.library.opcheck(torch.ops.tile.sum_cooperative.default, (torch.randn(5, 700),),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static",
                                      "test_aot_dispatch_dynamic"))


class _Props:
    multi_processor_count = 7


def test_sum_cooperative_grid_is_the_sm_count(monkeypatch):
    # The body reads the device's SM count (plain Python while tracing) and launches
    # min(SMs, cdiv(n, BLOCK)) programs.
    import torch_tile.kernels.cooperative_sum as mod

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: _Props())
    big, small = torch.randn(100_000), torch.randn(3000)
    plan = K.sum_cooperative.trace(big, device=CUDA)
    (step,) = plan.launches
    assert _grid(step, (big,)) == [7, 1, 1]
    assert _grid(step, (small,)) == [3, 1, 1]  # the same expression: cdiv(3000, 1024) < 7
    config = launch_config(step.config)
    assert config.statics["GRID_SYNC"] is True and config.options["launch_cooperative_grid"] is True
    assert mod.BLOCK == 1024


def test_sum_cooperative_grid_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    x = torch.randn(1_000_000)
    (step,) = K.sum_cooperative.trace(x, device=CUDA).launches
    assert _grid(step, (x,)) == [132, 1, 1]  # FALLBACK_SMS


def test_sum_cooperative_cuda_variant_is_cooperative_with_a_barrier():
    ((step, entry, compiled),) = _variants(K.sum_cooperative, torch.randn(100_000))
    assert entry["launch_cooperative_grid"] is True and entry["launch_pdl"] is False
    lines = _ptx_lines(compiled)
    # Arrival: a release atomic at GPU scope; spinning: acquire reads (Triton emits an acquire load for
    # atomic_add(ptr, 0, sem="acquire")) in a loop; the partials are re-read with volatile loads.
    arrive = _index(lines, "atom.global.gpu.release.add")
    spins = [i for i, line in enumerate(lines) if "acquire" in line and "global" in line]
    assert spins and arrive < spins[0]
    partial_reads = [i for i, line in enumerate(lines) if "ld.volatile.global" in line]
    assert partial_reads and spins[-1] < partial_reads[0]


def test_sum_cooperative_cpu_plan_does_not_spin():
    x = torch.randn(5000)
    (step,) = K.sum_cooperative.trace(x).launches
    config = launch_config(step.config)
    assert config.statics["GRID_SYNC"] is False and not config.options.get("launch_cooperative_grid", False)
    assert _grid(step, (x,)) == [4, 1, 1]  # CPU_PROGRAMS: the interpreter still runs the strided loop


# -- num_ctas=2 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("n", [1, 2047, 2048, 5000])
def test_affine_cluster_on_cpu(dtype, n):
    x = torch.randn(n, dtype=dtype)
    assert torch.equal(torch.ops.tt_launch_test.affine_cluster(x), x * 2 + 1)


def test_affine_cluster_variant_has_two_ctas():
    x = torch.randn(5000)
    ((step, entry, compiled),) = _variants(L.affine_cluster, x)
    assert entry["num_ctas"] == 2 and compiled.metadata.num_ctas == 2
    assert _grid(step, (x,)) == [3, 1, 1]  # programs; the launcher multiplies dimension 0 by num_ctas
    lines = _ptx_lines(compiled)
    assert ".reqnctapercluster 2" in lines


# -- > 48 KB of dynamic shared memory ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(L.SMEM_CONFIGS))
def test_matmul_big_smem_variant_needs_more_than_48kb(dtype):
    a = torch.randn(256, 192).to(dtype)
    b = torch.randn(192, 128).to(dtype)
    ((step, entry, compiled),) = _variants(L.matmul_big_smem, a, b)
    assert entry["shared"] > 49152, entry["shared"]
    assert entry["shared"] <= 227 * 1024  # what an sm_90 block can opt in to
    assert entry["shared"] == compiled.metadata.shared


@requires_interpreter_scalar_loops  # the K loop runs to a runtime bound
@pytest.mark.parametrize("mnk", [(8, 16, 32), (130, 129, 70)])
def test_matmul_big_smem_on_cpu(mnk):
    m, n, k = mnk
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.ops.tt_launch_test.matmul_big_smem(a, b)
    torch.testing.assert_close(out, a @ b, atol=1e-4, rtol=1e-4)


# -- cooperative launch of n programs ------------------------------------------------------------------


def test_cooperative_program_ids_on_cpu():
    out = torch.ops.tt_launch_test.cooperative_program_ids(torch.empty(1), 5)
    assert torch.equal(out, torch.arange(5, dtype=torch.int32))


def test_cooperative_program_ids_variant_is_cooperative():
    args = (torch.empty(1), L.TOO_MANY_PROGRAMS)
    ((step, entry, _),) = _variants(L.cooperative_program_ids, *args)
    assert entry["launch_cooperative_grid"] is True
    assert _grid(step, args) == [L.TOO_MANY_PROGRAMS, 1, 1]  # the grid is the argument n
