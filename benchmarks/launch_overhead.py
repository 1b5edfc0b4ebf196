"""Host time per call of a 1K-element add, six ways, in one process and one run.

    python benchmarks/launch_overhead.py [--iters N] [--out DIR]

Rows: torch_tile through torch.ops from Python (packet and .default overload);
torch_tile from C++ through c10::Dispatcher, and its implementation called
directly (to show what the dispatcher costs), and its in-place add_ (no output to
allocate); Triton's JIT launch (kernel[grid], allocating the output like
the op does); torch.library.triton_op; eager torch.add; and bare
cuLaunchKernelEx replaying the same launch (the floor); and, with --cpp-program,
a LibTorch program with no Python in it (examples/cpp, built with CMake here)
calling tile::add through c10::Dispatcher after loading a bundle exported in
this process (its loop is timed inside it, per repeat). Two more rows help read
them: the allocation + free of the output alone (CUDA caching allocator), and
the floor loop with that allocation + free added; the JSON also has the
direct call's time split into its phases (ns, stamped inside real calls). Each is timed as the
host wall time of a loop of calls divided by the count, with the GPU
synchronised before each loop; rows take turns within each repeat and the
median over repeats is reported (with min..max). Writes
launch_overhead.json and launch_overhead.png to --out.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

import torch
import triton

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile.demo import host_seconds
from torch_tile import _testing

from _report import write
from _timing import interleaved_us

N = 1024


def triton_jit_add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    K.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


def _triton_op():
    from torch.library import triton_op, wrap_triton

    @triton_op("tile_bench::add", mutates_args=())
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        wrap_triton(K.add_kernel)[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out

    return torch.ops.tile_bench.add


def _cpp_program_row(workdir: str):
    """A measure for the C++ example program: µs per tile::add call, as it reports them
    (its 1K-element fp32 add is one of the example calls the bundle is prepared for)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "cpp"))
    import build as example  # noqa: E402 - examples/cpp/build.py
    import ops  # noqa: E402 - examples/cpp/ops.py: the example's ops, which the program checks too

    bundle = os.path.join(workdir, "ops.ttb")
    tt.export_bundle(ops.OPS, bundle, examples=ops.examples("cuda"))
    program = example.build(os.path.join(workdir, "example"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}

    def measure(n):
        out = subprocess.run([program, bundle, "--bench", str(n)], capture_output=True, text=True, env=env)
        found = re.search(r"bench tile::add us_per_call ([0-9.]+)", out.stdout)
        if out.returncode != 0 or not found:
            raise RuntimeError(f"the C++ example failed:\n{out.stdout}\n{out.stderr}")
        return float(found.group(1)) * n / 1e6

    return measure


def run(iters: int, repeats: int, cpp_program: bool = False) -> dict:
    x = torch.randn(N, device="cuda")
    y = torch.randn(N, device="cuda")
    ref = x + y
    acc = torch.zeros(N, device="cuda")  # tile.add_ accumulates into it
    triton_op_add = _triton_op()
    for fn in (torch.ops.tile.add, triton_jit_add, triton_op_add):
        torch.testing.assert_close(fn(x, y), ref)
    tile_add = torch.ops.tile.add
    tile_add_overload = torch.ops.tile.add.default

    def py_loop(fn):
        return lambda n: host_seconds(fn, n)

    measures = {
        "torch_tile (torch.ops, Python)": py_loop(lambda: tile_add(x, y)),
        "torch_tile (.default overload)": py_loop(lambda: tile_add_overload(x, y)),
        "torch_tile (C++ dispatcher)": lambda n: _testing.bench_dispatcher("tile::add", (x, y), n),
        "torch_tile (C++, no dispatcher)": lambda n: _testing.bench_direct("tile::add", (x, y), n),
        "torch_tile add_ in place (C++ dispatcher)":
            lambda n: _testing.bench_dispatcher("tile::add_", (acc, y), n),
        "Triton JIT kernel[grid]": py_loop(lambda: triton_jit_add(x, y)),
        "torch.library.triton_op": py_loop(lambda: triton_op_add(x, y)),
        "eager torch.add": py_loop(lambda: torch.add(x, y)),
        "raw cuLaunchKernelEx (floor)": lambda n: _testing.bench_raw_launch("tile::add", (x, y), n),
        "output alloc + free only": lambda n: _testing.bench_output_allocation(x, n),
        "floor + output alloc + free":
            lambda n: _testing.bench_raw_launch("tile::add", (x, y), n, allocate_like=x),
    }
    workdir = tempfile.mkdtemp(prefix="tile_cpp_")
    if cpp_program:
        measures["C++ program, no Python (LibTorch + bundle)"] = _cpp_program_row(workdir)
    timed = interleaved_us(measures, iters, repeats)
    rows = {name: t["median"] for name, t in timed.items()}
    spread = {name: [t["best"], t["worst"]] for name, t in timed.items()}
    phases = _testing.bench_phases("tile::add", (x, y), iters * 10)
    py = rows["torch_tile (torch.ops, Python)"]
    cpp = rows["torch_tile (C++ dispatcher)"]
    floor = rows["raw cuLaunchKernelEx (floor)"]
    # What an op that returns a new tensor can reach: the launch plus the output's allocation and free.
    allocating_floor = rows["floor + output alloc + free"]
    targets = {
        "torch.ops tile.add <= eager torch.add": py <= rows["eager torch.add"],
        "Triton JIT / torch_tile >= 2.5": rows["Triton JIT kernel[grid]"] / py >= 2.5,
        "C++ dispatcher <= 1.15 x (floor + output alloc + free)": cpp <= 1.15 * allocating_floor,
    }
    program = rows.get("C++ program, no Python (LibTorch + bundle)")
    if program is not None:
        targets["C++ program <= 1.15 x (floor + output alloc + free)"] = program <= 1.15 * allocating_floor
    return {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "elements": N,
        "iters": iters,
        "repeats": repeats,
        "host_us_per_call": rows,
        "host_us_per_call_min_max": spread,
        "launch_path_phases_ns": phases,
        "ratios": {
            "triton_jit_over_torch_tile": rows["Triton JIT kernel[grid]"] / py,
            "triton_op_over_torch_tile": rows["torch.library.triton_op"] / py,
            "torch_tile_over_eager_add": py / rows["eager torch.add"],
            "cpp_dispatcher_over_floor": cpp / floor,
            "cpp_dispatcher_over_floor_with_allocation": cpp / allocating_floor,
            **({"cpp_program_over_floor_with_allocation": program / allocating_floor} if program else {}),
        },
        "targets_met": targets,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    parser.add_argument("--cpp-program", action="store_true",
                        help="add the row of the C++ example program (needs cmake; builds it)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("launch_overhead: needs a CUDA GPU")
        return 0
    os.makedirs(args.out, exist_ok=True)
    result = run(args.iters, args.repeats, args.cpp_program)
    for name, us in result["host_us_per_call"].items():
        print(f"{name:34s} {us:8.2f} µs/call")
    for name, ns in result["launch_path_phases_ns"].items():
        print(f"  phase {name:40s} {ns:8.1f} ns")
    for name, value in result["ratios"].items():
        print(f"{name:34s} {value:8.2f}")
    for name, ok in result["targets_met"].items():
        print(f"target {name}: {'met' if ok else 'NOT met'}")
    write(args.out, "launch_overhead", result, result["host_us_per_call"], unit="µs",
          xlabel="host µs per call (1K-element add)", title=f"Launch overhead on {result['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
