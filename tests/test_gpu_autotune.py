"""GPU tests of @triton.autotune kernels in op bodies: real
timing on the first call of a key, the choice reused natively and by a fresh
process (disk), arguments the kernel writes left as if it ran once, a clear
error for a new key during CUDA-graph capture, and a config failing its static
assertion skipped as Triton's own autotuner skips it. Device machine only."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile.frontends.triton import autotune

from conftest import requires_cuda

pytestmark = requires_cuda
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = [triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=4),
           triton.Config({"BLOCK": 4096}, num_warps=8)]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def tuned_axpy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 2.0 * tl.load(y_ptr + offs, mask=mask), mask=mask)


@tt.op("tile_gpu_autotune::axpy_", mutates_args=("x",))
def axpy_(x: torch.Tensor, y: torch.Tensor) -> None:
    """x += 2 y, in place, with an autotuned block size."""
    n = x.numel()
    tuned_axpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)


def test_first_call_times_configs_and_the_write_happens_once():
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    want = x + 2 * y
    before = autotune.tunings_run
    axpy_(x, y)  # timing runs work on clones: x is written once
    torch.testing.assert_close(x, want)
    assert autotune.tunings_run == before + 1
    traces = tt.runtime_counters()["traces"]
    axpy_(x, y)
    torch.testing.assert_close(x, want + 2 * y)
    assert autotune.tunings_run == before + 1 and tt.runtime_counters()["traces"] == traces


FRESH = textwrap.dedent("""
    import json, torch
    from torch_tile.frontends.triton import autotune
    import test_gpu_autotune as t
    x, y = torch.randn(1 << 18, device="cuda"), torch.randn(1 << 18, device="cuda")
    want = x + 2 * y
    t.axpy_(x, y)
    print(json.dumps({"ok": bool(torch.allclose(x, want)), "benchmarks": autotune.tunings_run}))
""")


def test_a_fresh_process_reuses_the_choice(tmp_path):
    env = {**os.environ, "TORCH_TILE_CACHE_DIR": str(tmp_path), "TORCH_TILE_TEST_SUBPROCESS": "1",
           "PYTHONPATH": os.pathsep.join([ROOT, f"{ROOT}/tests"])}
    runs = [subprocess.run([sys.executable, "-c", FRESH], env=env, capture_output=True, text=True, timeout=600)
            for _ in range(2)]
    results = [json.loads(r.stdout.strip().splitlines()[-1]) for r in runs]
    assert all(r["ok"] for r in results), [r.stderr for r in runs]
    assert [r["benchmarks"] for r in results] == [1, 0]


def test_new_key_during_capture_is_a_clear_error():
    x, y = torch.randn(12345, device="cuda"), torch.randn(12345, device="cuda")
    g = torch.cuda.CUDAGraph()
    with pytest.raises(Exception, match="during CUDA-graph capture.*before capturing"):
        with torch.cuda.graph(g):
            axpy_(x, y)
    axpy_(x, y)  # warm: now capture works and replays
    want = x + 2 * y
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        axpy_(x, y)
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(x, want)


@triton.jit
def _at_least_1024_axpy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 1024, "BLOCK must be at least 1024")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 2.0 * tl.load(y_ptr + offs, mask=mask), mask=mask)


LIBRARY_TUNER = triton.autotune(configs=CONFIGS, key=["n"])(_at_least_1024_axpy_kernel)  # the library's own call
OP_TUNER = triton.autotune(configs=CONFIGS, key=["n"])(_at_least_1024_axpy_kernel)  # a tuner of the op's


def _at_least_1024_axpy_(tuner, x: torch.Tensor, y: torch.Tensor) -> None:
    n = x.numel()
    tuner[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)


@tt.op("tile_gpu_autotune::at_least_1024_axpy_", mutates_args=("x",))
def at_least_1024_axpy_(x: torch.Tensor, y: torch.Tensor) -> None:
    _at_least_1024_axpy_(OP_TUNER, x, y)


def test_a_config_failing_its_static_assert_is_skipped_as_tritons_autotuner_skips_it():
    x, y = torch.randn(100_000, device="cuda"), torch.randn(100_000, device="cuda")
    x_library = x.clone()
    for _ in range(2):  # tuned, then natively with the choice
        _at_least_1024_axpy_(LIBRARY_TUNER, x_library, y)
        at_least_1024_axpy_(x, y)
        torch.testing.assert_close(x, x_library, rtol=0, atol=0)
    assert LIBRARY_TUNER.best_config.kwargs["BLOCK"] >= 1024 and OP_TUNER.best_config.kwargs["BLOCK"] >= 1024
