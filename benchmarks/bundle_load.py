"""Time to the first launch from a bundle of 10 ops and 50 variants, in a fresh process.

    python benchmarks/bundle_load.py [--repeats N] [--out DIR]

Ten ops (``bundle_bench::scale0`` .. ``scale9``, each its own kernel) are
called here with five dtypes each (50 variants), exported to one bundle, and
a fresh Python process (torch and torch_tile imported before the clock starts,
as a C++ program has LibTorch loaded) times ``torch_tile.load_bundle`` and then
the first call of one op up to its completion on the GPU (module load included).
The median over repeats is reported; the target is 50 ms. Writes
bundle_load.json to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

import torch_tile as tt

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32)
SOURCE = '''
@triton.jit
def scale{i}_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * {k}, mask=mask)


@tt.op("bundle_bench::scale{i}")
def scale{i}(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    scale{i}_kernel[(triton.cdiv(n, 256),)](out, x, n, BLOCK=256)
    return out
'''
FRESH = """
import sys, time, torch, torch_tile
x = torch.ones(1000, device="cuda")
torch.cuda.synchronize()
start = time.perf_counter()
torch_tile.load_bundle(sys.argv[1])
loaded = time.perf_counter()
out = torch.ops.bundle_bench.scale7(x)
torch.cuda.synchronize()
done = time.perf_counter()
assert torch.equal(out, x * 9), out
assert torch_tile.runtime_counters()["traces"] == 0 and torch_tile.compile_count() == 0
print((loaded - start) * 1e3, (done - start) * 1e3)
"""


def define_ops() -> list:
    # Triton's JIT reads kernels' source from their file: the ops are written to a module first.
    path = os.path.join(tempfile.mkdtemp(prefix="bundle_bench_"), "bundle_bench_ops.py")
    with open(path, "w") as f:
        f.write("import torch, triton, triton.language as tl\nimport torch_tile as tt\n")
        f.write("".join(SOURCE.format(i=i, k=i + 2) for i in range(10)))
    sys.path.insert(0, os.path.dirname(path))
    import bundle_bench_ops  # noqa: E402

    return [getattr(bundle_bench_ops, f"scale{i}") for i in range(10)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bundle_load: needs a CUDA GPU")
        return 0
    ops = define_ops()
    for op in ops:
        for dtype in DTYPES:
            op(torch.ones(1000, device="cuda", dtype=dtype))
    path = os.path.join(tempfile.mkdtemp(prefix="bundle_bench_"), "ten_ops.ttb")
    summary = tt.export_bundle("bundle_bench", path)
    env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")}
    loads, firsts = [], []
    for _ in range(args.repeats):
        out = subprocess.run([sys.executable, "-c", FRESH, path], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            print(out.stdout, out.stderr)
            return 1
        load_ms, first_ms = map(float, out.stdout.split())
        loads.append(load_ms)
        firsts.append(first_ms)
    result = {
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "ops": len(summary["ops"]), "variants": summary["variants"], "bundle_bytes": summary["bytes"],
        "load_ms_median": statistics.median(loads), "first_launch_done_ms_median": statistics.median(firsts),
        "first_launch_done_ms_all": firsts,
        "targets_met": {"load + first launch <= 50 ms": statistics.median(firsts) <= 50.0},
    }
    print(json.dumps(result, indent=1))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bundle_load.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
