"""TileLang kernels on the GPU: tile::matmul_tilelang (TileLang's TMA GEMM, called as ``kernel(a, b)`` in the body)
against torch and against TileLang's own executor calling the same JITKernel, one plan across sizes, a pointer
kernel with a float scalar, a CUDA graph, torch.compile (fullgraph, dynamic) and a bundle that a process without
TileLang loads and runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import torch_tile as tt
from torch_tile import _C

tilelang = pytest.importorskip("tilelang", reason="needs tilelang (pip install torch_tile[tilelang])")
from torch_tile.kernels import matmul_tilelang as mt  # noqa: E402

import tilelang_cases as cases  # noqa: E402

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
              pytest.mark.skipif(bool(cases.nvcc_missing()), reason=cases.nvcc_missing() or "nvcc found")]

SHAPES = [(256, 512, 256), (300, 136, 200), (1, 64, 8), (1000, 1024, 520)]  # (M, K, N): K, N multiples of 8


def _inputs(m, k, n, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=g)
    return a, b


def test_matches_torch_and_tilelangs_own_executor():
    kernel = mt.gemm_kernel()
    for m, k, n in SHAPES:
        a, b = _inputs(m, k, n)
        got = torch.ops.tile.matmul_tilelang(a, b)
        torch.testing.assert_close(got, (a.float() @ b.float()).half(), atol=2e-2, rtol=2e-2)
        # TileLang's executor runs the same JITKernel (the same cubin): the same bits.
        torch.testing.assert_close(got, kernel(a, b), atol=0, rtol=0)
    # One plan serves every size: the kernel's sizes are TileLang's dynamic symbols.
    assert len(_C.plans_of("tile::matmul_tilelang")) == 1


def test_a_pointer_kernel_with_a_float_scalar():
    for n in (1, 1000, 4097):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        torch.testing.assert_close(torch.ops.tilelang_test.scale_add(x, y, 0.25), x * 0.25 + y)
        torch.testing.assert_close(torch.ops.tilelang_test.scale_add(x, y, -2.0), cases.scale_add_kernel()(x, y, -2.0),
                                   atol=0, rtol=0)
    x = torch.randn(37, 64, device="cuda", dtype=torch.float16)
    rows = torch.arange(37, device="cuda", dtype=torch.float16)[:, None]
    torch.testing.assert_close(torch.ops.tilelang_test.add_row_index(x), x + rows)


def test_a_jit_factory_called_with_sizes_in_the_body():
    for shape in ((4, 200), (33, 1000)):
        x = torch.randn(shape, device="cuda")
        torch.testing.assert_close(torch.ops.tilelang_test.scale_rows(x), x * 2.0)


def test_a_cuda_graph_replays_the_op():
    a, b = _inputs(256, 512, 256)
    torch.ops.tile.matmul_tilelang(a, b)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = torch.ops.tile.matmul_tilelang(a, b)
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.testing.assert_close(out, (a.float() @ b.float()).half(), atol=2e-2, rtol=2e-2)


def test_torch_compile_fullgraph_dynamic():
    compiled = torch.compile(lambda a, b: torch.ops.tile.matmul_tilelang(a * 1.0, b) + 1.0, fullgraph=True,
                             dynamic=True)
    for m, k, n in SHAPES[:3]:
        a, b = _inputs(m, k, n, seed=1)
        torch.testing.assert_close(compiled(a, b), (a.float() @ b.float()).half() + 1.0, atol=2e-2, rtol=2e-2)


def test_a_bundle_runs_in_a_process_without_tilelang(tmp_path):
    path = str(tmp_path / "tilelang.ttb")
    examples = [_inputs(m, k, n) for m, k, n in SHAPES[:2]]
    summary = tt.export_bundle(["tile::matmul_tilelang"], path, examples={"tile::matmul_tilelang": examples})
    assert summary["variants"] == 1
    script = f"""
import sys
sys.modules["tilelang"] = None  # importing TileLang fails in this process
import torch, torch_tile
torch_tile.load_bundle({path!r})
for m, k, n in {SHAPES!r}:
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(torch.ops.tile.matmul_tilelang(a, b), (a.float() @ b.float()).half(),
                               atol=2e-2, rtol=2e-2)
counters = torch_tile.runtime_counters()
assert counters["traces"] == 0 and torch_tile.compile_count() == 0, counters
print("no TileLang OK")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no TileLang OK" in out.stdout
