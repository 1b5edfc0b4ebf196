"""Time to first result in a fresh process: torch_tile cold and warm (disk cache)
against Triton's own JIT cold and warm (its cache directory).

    python benchmarks/warm_start.py [--repeats N] [--out DIR]

Each measurement is a new Python process that imports torch, Triton and
torch_tile, makes its inputs on the GPU, then times (wall clock, GPU
synchronised) the first call of one op (``tile::add``), of the demo's four
ops (add, softmax, layer_norm, matmul), or of ``tile::softmax_cuda`` (a CUDA C++
kernel: NVRTC variants; torch_tile rows only). "cold" starts with empty
``TORCH_TILE_CACHE_DIR`` and ``TRITON_CACHE_DIR``; "warm" reuses the
directories a cold process filled. Triton rows run the same op bodies with
Triton's own launcher (``kernel[grid](...)``). Warm torch_tile processes also
report how many variants they compiled (should be 0). Writes warm_start.json
and warm_start.png to --out.

    python benchmarks/warm_start.py --profile-cold [OPS...]

instead prints where a cold first call's time goes: cProfile of the timed
region of one cold torch_tile process and one cold Triton process (top
functions by cumulative time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _report import write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OP_SETS = {"one op": ["add"], "demo ops": ["add", "softmax", "layer_norm", "matmul"],
           "CUDA C++ op": ["softmax_cuda"]}  # NVRTC variants (torch_tile only: the body is its own launch path)


def _inputs(name: str):
    import torch

    if name == "add":
        return (torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda"))
    if name in ("softmax", "softmax_cuda"):
        return (torch.randn(64, 1000, device="cuda"),)
    if name == "layer_norm":
        return (torch.randn(64, 512, device="cuda"), torch.randn(512, device="cuda"), torch.randn(512, device="cuda"),
                1e-5)
    return (torch.randn(128, 64, device="cuda"), torch.randn(64, 96, device="cuda"))


def worker(launcher: str, ops: list[str]) -> dict:
    """Runs in the fresh process: first call(s), timed."""
    import torch

    import torch_tile as tt
    from torch_tile import kernels as K

    calls = []
    for name in ops:
        op = getattr(K, name)
        args = _inputs(name)
        calls.append((op if launcher == "torch_tile" else op.fn, args))  # op.fn: the body, Triton's launcher
    torch.cuda.synchronize()
    profiler = None
    if os.environ.get("WARM_START_PROFILE"):
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    for fn, args in calls:
        fn(*args)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if profiler is not None:
        import pstats

        profiler.disable()
        print(f"--- {launcher} cold first call of {ops}: {seconds * 1e3:.1f} ms", file=sys.stderr)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    return {"seconds": seconds, "compiles": tt.compile_count()}


def _run(launcher: str, ops: list[str], cache: str, triton_cache: str, profile: bool = False) -> dict:
    env = {**os.environ, "TORCH_TILE_CACHE_DIR": cache, "TRITON_CACHE_DIR": triton_cache,
           "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if profile:
        env["WARM_START_PROFILE"] = "1"
    out = subprocess.run([sys.executable, __file__, "--worker", launcher, *ops], env=env, capture_output=True,
                         text=True, check=True)
    if profile:
        print(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(repeats: int) -> dict:
    rows: dict[str, list[float]] = {}
    warm_compiles = []
    for set_name, ops in OP_SETS.items():
        for launcher in ("torch_tile",) if set_name == "CUDA C++ op" else ("torch_tile", "triton"):
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as triton_cache:
                    cold = _run(launcher, ops, cache, triton_cache)
                    warm = _run(launcher, ops, cache, triton_cache)
                rows.setdefault(f"{launcher} cold, {set_name}", []).append(cold["seconds"] * 1e3)
                rows.setdefault(f"{launcher} warm, {set_name}", []).append(warm["seconds"] * 1e3)
                if launcher == "torch_tile":
                    warm_compiles.append(warm["compiles"])
    return {"ms": {k: statistics.median(v) for k, v in rows.items()},
            "ms_min_max": {k: [min(v), max(v)] for k, v in rows.items()},
            "torch_tile_warm_compiles": warm_compiles}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    parser.add_argument("--profile-cold", nargs="*", metavar="OP", help="profile cold first calls (default: add)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1:])))
        return 0
    import torch

    if not torch.cuda.is_available():
        print("warm_start: needs a CUDA GPU")
        return 0
    if args.profile_cold is not None:
        for launcher in ("torch_tile", "triton"):
            with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as triton_cache:
                _run(launcher, args.profile_cold or ["add"], cache, triton_cache, profile=True)
        return 0
    os.makedirs(args.out, exist_ok=True)
    result = {"device": torch.cuda.get_device_name(), "repeats": args.repeats, **measure(args.repeats)}
    ms = result["ms"]
    one_warm = ms["torch_tile warm, one op"]
    result["targets_met"] = {
        "warm first call <= 50 ms": one_warm <= 50,
        "warm >= 5x faster than Triton's warm-cache first call": ms["triton warm, one op"] / one_warm >= 5,
        "warm processes compiled nothing": not any(result["torch_tile_warm_compiles"]),
        "NVRTC variant warm from the disk cache: first call <= 10 ms": ms["torch_tile warm, CUDA C++ op"] <= 10,
    }
    for name, value in ms.items():
        print(f"{name:32s} {value:9.1f} ms")
    for name, ok in result["targets_met"].items():
        print(f"target {name}: {'met' if ok else 'NOT met'}")
    write(args.out, "warm_start", result, ms, unit="ms", digits=1, log=True,
          xlabel="ms to first result in a fresh process (log scale)", title=f"Warm start on {result['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
