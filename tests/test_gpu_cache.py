"""GPU tests: a fresh process starts warm from the disk cache
(without compiling), and one process serves two GPUs (modules, device guard
and streams per device). Device machine only."""

import json
import os
import subprocess
import sys
import textwrap

import torch

from torch_tile import kernels as K

from conftest import requires_cuda, requires_two_gpus

pytestmark = requires_cuda
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FIRST_CALL = textwrap.dedent("""
    import json, time, torch
    import torch_tile as tt
    from torch_tile import kernels as K
    x = torch.randn(3000, device="cuda")
    y = torch.randn(3000, device="cuda")
    s = torch.randn(32, 700, device="cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    out, p = K.add(x, y), K.softmax(s)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    ok = torch.allclose(out, x + y) and torch.allclose(p, torch.softmax(s, -1), atol=1e-6)
    print(json.dumps({"compiles": tt.compile_count(), "ok": bool(ok), "seconds": seconds}))
""")


def _fresh_process(cache_dir, triton_cache):
    env = {**os.environ, "TORCH_TILE_CACHE_DIR": str(cache_dir), "TRITON_CACHE_DIR": str(triton_cache),
           "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_fresh_process_starts_warm_without_compiling(tmp_path):
    cold = _fresh_process(tmp_path / "tile", tmp_path / "triton")
    warm = _fresh_process(tmp_path / "tile", tmp_path / "triton")
    assert cold["ok"] and warm["ok"]
    assert cold["compiles"] == 2 and warm["compiles"] == 0
    assert warm["seconds"] < cold["seconds"]


@requires_two_gpus
def test_one_op_on_two_devices_uses_each_devices_current_stream():
    torch.cuda.set_device(0)
    x0, y0 = torch.randn(5000, device="cuda:0"), torch.randn(5000, device="cuda:0")
    x1, y1 = torch.randn(5000, device="cuda:1"), torch.randn(5000, device="cuda:1")
    K.add(x0, y0), K.add(x1, y1)  # compiled, and loaded on both devices, before timing matters
    torch.cuda.synchronize(0), torch.cuda.synchronize(1)
    side = torch.cuda.Stream(device=1)
    with torch.cuda.stream(side):
        torch.cuda._sleep(1_000_000_000)  # keeps the side stream busy (~0.5 s)
        out1 = K.add(x1, y1)  # must queue behind the sleep, on cuda:1's current stream
    assert torch.cuda.current_device() == 0  # the device guard restored the caller's device
    assert not side.query()
    out0 = K.add(x0, y0)
    side.synchronize()
    torch.testing.assert_close(out1, x1 + y1)
    torch.testing.assert_close(out0, x0 + y0)
    assert out1.device == torch.device("cuda:1") and out0.device == torch.device("cuda:0")
