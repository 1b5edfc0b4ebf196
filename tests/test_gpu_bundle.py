"""Bundles on the H200 (CPU counterpart: tests/test_cpu_bundle.py): a bundle
exported after real calls serves a fresh Python process with no trace and no
Triton compile, and the C++ example program runs the ops with no libpython in
the process (checked from /proc/self/maps), against libtorch's own results."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import torch_tile as tt

import test_cpu_bundle as C

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("gpu_bundle") / "ops.ttb")
    with C.private_disk_cache(tmp_path_factory.mktemp("gpu_bundle_cache")):
        for name, calls in C.ops.examples("cuda").items():  # real calls: traced, compiled, autotuned on the GPU
            for call in calls:
                getattr(getattr(torch.ops, name.split("::")[0]), name.split("::")[1])(*call)
        summary = tt.export_bundle(C.OPS, path, examples=C.ops.examples("cuda"))
    major, minor = torch.cuda.get_device_capability()
    assert summary["capabilities"] == [major * 10 + minor]
    return path


def test_a_fresh_process_runs_the_bundle_without_tracing_or_compiling(exported):
    script = f"""
import torch, torch_tile
torch_tile.load_bundle({exported!r})
x = torch.randn(1000, 37, device="cuda", dtype=torch.float16)
torch.testing.assert_close(torch.ops.tile.add(x, x), x + x)
torch.testing.assert_close(torch.ops.demo.scale_rows(x, 0.5), x * 0.5)
torch.testing.assert_close(torch.ops.demo.scaled_softmax(x, 2.0), torch.softmax(x.float(), -1).half() * 2.0,
                           atol=2e-3, rtol=2e-3)
counters = torch_tile.runtime_counters()
assert counters["traces"] == 0, counters
assert torch_tile.compile_count() == 0, torch_tile.compile_count()
print("fresh GPU process OK", counters)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": C.ROOT})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "fresh GPU process OK" in out.stdout


def test_cpp_program_runs_the_ops_with_no_python(exported, cpp_examples):
    program = os.path.join(cpp_examples, "tile_example")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([program, exported, "--bench", "20000"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    for line in ("ok   no libpython in the process", "ok   tile::add float16 matches at::add",
                 "ok   demo::scaled_softmax (two kernels) float32 matches at::softmax * 2",
                 "ok   demo::scale_rows (autotuned) float16 matches a * 0.5", "ALL OK"):
        assert line in out.stdout, out.stdout
    assert "a float64 call, which the bundle has no plan for, is a clear error" in out.stdout
