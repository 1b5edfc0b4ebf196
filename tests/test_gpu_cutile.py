"""cuTile kernels on the GPU: tile::softmax_cutile (its kernel in cuda.tile,
launched with ct.launch in the body) against torch, the Triton tile::softmax and
cuTile's own launch of the same kernel, strided rows, a CUDA graph and
torch.compile. With $TORCH_TILE_CUTILE_BUNDLE (dev/cutile_bundle.py) the
variants come from that bundle, compiled where tileiras runs; otherwise they
compile here. Where tileiras cannot run (the H200 image with driver
580: docs/CUTILE.md), cuTile's own launch
finds its cubins only in the cuTile cache written beside that bundle
(dev/cutile_device.sh), so it runs only if torch_tile specialised each call
exactly as cuTile does."""

from __future__ import annotations

import os

import pytest
import torch

import torch_tile as tt

ct = pytest.importorskip("cuda.tile", reason="needs cuda-tile (pip install torch_tile[cutile])")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

import cutile_cases  # noqa: E402
from torch_tile import kernels as K  # noqa: E402
from torch_tile.kernels import softmax_cutile  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def bundled_variants():
    path = os.environ.get("TORCH_TILE_CUTILE_BUNDLE")
    if path:
        tt.load_bundle(path)


def test_matches_torch_and_the_triton_softmax():
    for x in cutile_cases.inputs("cuda"):
        got = torch.ops.tile.softmax_cutile(x)
        tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[x.dtype]
        torch.testing.assert_close(got, torch.softmax(x.float(), -1).to(x.dtype), atol=tol, rtol=tol)
        if x.dtype == torch.float32 and x.stride(1) == 1:  # tile::softmax takes contiguous rows only
            torch.testing.assert_close(got, K.softmax(x), atol=1e-6, rtol=1e-5)


def test_matches_cutile_own_launch():
    """The op and ct.launch outside any op (cuTile's own JIT and launcher) compute the same bits. Where
    tileiras cannot run, a case whose constraints differ from cuTile's misses cuTile's cache and fails to
    compile: every such case is named."""
    missed = []
    for x in cutile_cases.inputs("cuda"):
        want = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        tile_n = 1 << (x.shape[1] - 1).bit_length()
        try:
            ct.launch(torch.cuda.current_stream(), (x.shape[0],), softmax_cutile.softmax_rows, (x, want, tile_n))
        except Exception as e:  # noqa: BLE001 - reported below, per case
            missed.append((tuple(x.shape), x.stride(), x.dtype, type(e).__name__))
            continue
        torch.testing.assert_close(torch.ops.tile.softmax_cutile(x), want, atol=0, rtol=0)
    assert not missed, f"ct.launch could not run these cases (shape, strides, dtype, error): {missed}"


def test_a_cuda_graph_replays_the_op():
    x = cutile_cases.inputs("cuda")[0]
    torch.ops.tile.softmax_cutile(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = torch.ops.tile.softmax_cutile(x)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.testing.assert_close(out, torch.softmax(x, -1), atol=1e-5, rtol=1e-5)


def test_torch_compile_sees_the_op():
    x = cutile_cases.inputs("cuda")[0]
    compiled = torch.compile(lambda t: torch.ops.tile.softmax_cutile(t * 1.0), fullgraph=True)
    torch.testing.assert_close(compiled(x), torch.softmax(x, -1), atol=1e-5, rtol=1e-5)
