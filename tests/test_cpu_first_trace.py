"""The first trace of a process stays off torch's heavy modules (cold start): ShapeEnv's search for
a "user frame" per symbol (``uninteresting_files()``) imports torch.export, AOTAutograd's partitioners
(networkx), Inductor's sizevars and Dynamo's guards, half a second or more, for a location torch_tile never
shows; torch_tile's trace ShapeEnv skips it."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = """
import sys
import torch, torch_tile
sys.path.insert(0, {tests!r})
import cuda_source_ops  # an op whose body runs ATen on symbolic sizes (x.contiguous())
heavy = ("torch.export._trace", "networkx", "torch._functorch.partitioners")
assert not [m for m in heavy if m in sys.modules], [m for m in heavy if m in sys.modules]
torch_tile._C.variant_keys("cuda_test::scale", (torch.randn(1000), 2.0), {{}})  # traces
assert torch_tile.runtime_counters()["traces"] == 1
loaded = [m for m in heavy if m in sys.modules]
print("loaded by the first trace:", loaded)
"""


def test_the_first_trace_imports_none_of_torchs_heavy_modules(tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT, "TORCH_TILE_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=os.path.join(ROOT, "tests"))],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "loaded by the first trace: []" in done.stdout
