"""Real wrappers as tile ops: host µs per call, in one process and one run.

    python benchmarks/real_wrappers.py [--iters N] [--out DIR]

For each entry of the corpus (tests/liger_corpus.py: Liger-Kernel 0.8.5 and
the Triton tutorials' wrappers, called unchanged from op bodies) that torch_tile
takes, its first case's arguments are built on the GPU and timed three ways,
in turn within each repeat (median over repeats): the tile op from Python
(``torch.ops.<ns>.<name>``), the library's wrapper called directly (Triton's
launcher), and their ratio. The entries' plans are summarised too: how many
steps are views (no ATen call) and ATen steps.

More rows answer "what does a plan step cost": a body that only takes a view
of its input and launches (``view_launch``) against the same launch on the input
itself (``plain_launch``), and a body with one ATen step (``aten_launch``:
``.float()`` of an fp16 input) against its plan minus the step, made by the
caller: ``aten::_to_copy`` then ``plain_launch`` on its output. Each is timed
from Python (``torch.ops``) and from C++ through c10::Dispatcher with the GIL
released (``_C.testing.bench_dispatcher_chain``), all interleaved in one run.
The C++ rows are the acceptance check: a view step should cost nothing
(view_launch / plain_launch about 1) and an ATen step no more than the caller
making the same dispatcher call (aten_launch / (_to_copy + plain_launch) at most
1); both ratios are in the JSON summary. Writes real_wrappers.json and
real_wrappers.png to --out.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
import triton

import torch_tile as tt
from torch_tile.demo import host_seconds

from _report import write

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import views_aten_ops as V  # noqa: E402


def _py(fn):
    """A timer (calls -> seconds) for a Python callable."""
    return lambda n: host_seconds(fn, n)


def _cpp(steps: list):
    """A timer for a chain of dispatcher calls made from C++, the GPU idle before and drained after (as
    host_seconds does for Python)."""
    def timer(n: int) -> float:
        torch.cuda.synchronize()
        seconds = tt._C.testing.bench_dispatcher_chain(steps, n)
        torch.cuda.synchronize()
        return seconds
    return timer


def _medians(timers: dict, iters: int, repeats: int) -> dict:
    for timer in timers.values():
        timer(max(iters // 10, 10))  # warm
    samples = {name: [] for name in timers}
    for _ in range(repeats):
        for name, timer in timers.items():
            samples[name].append(timer(iters) / iters * 1e6)
    return {name: statistics.median(v) for name, v in samples.items()}


@tt.op("bench_wrappers::plain_launch")
def plain_launch(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    V.axpy_kernel[(triton.cdiv(n, 1024),)](x, x, out, n, 1.0, BLOCK=1024)
    return out


@tt.op("bench_wrappers::view_launch")
def view_launch(x: torch.Tensor) -> torch.Tensor:
    flat = x.view(-1)
    out = torch.empty_like(flat)
    n = flat.numel()
    V.axpy_kernel[(triton.cdiv(n, 1024),)](flat, flat, out, n, 1.0, BLOCK=1024)
    return out


@tt.op("bench_wrappers::aten_launch")
def aten_launch(x: torch.Tensor) -> torch.Tensor:
    x32 = x.float()
    out = torch.empty_like(x32)
    n = x32.numel()
    V.axpy_kernel[(triton.cdiv(n, 1024),)](x32, x32, out, n, 1.0, BLOCK=1024)
    return out


def step_costs(iters: int, repeats: int) -> dict:
    x = torch.randn(32, 32, device="cuda")
    h = x.half()
    return _medians({
        "plain_launch": _py(lambda: plain_launch(x)),
        "view_launch": _py(lambda: view_launch(x)),
        "aten_launch (fp16 -> .float())": _py(lambda: aten_launch(h)),
        "aten::_to_copy from Python + plain_launch":
            _py(lambda: plain_launch(torch.ops.aten._to_copy(h, dtype=torch.float32))),
        # The same from C++ (steps: qualname, overload, args, kwargs; `...` is the previous step's output).
        "C++ plain_launch": _cpp([("bench_wrappers::plain_launch", "", (x,), {})]),
        "C++ view_launch": _cpp([("bench_wrappers::view_launch", "", (x,), {})]),
        "C++ aten_launch": _cpp([("bench_wrappers::aten_launch", "", (h,), {})]),
        "C++ aten::_to_copy + plain_launch": _cpp([("aten::_to_copy", "", (h,), {"dtype": torch.float32}),
                                                   ("bench_wrappers::plain_launch", "", (...,), {})]),
    }, iters, repeats)


def corpus_rows(iters: int, repeats: int) -> tuple[dict, dict]:
    import liger_corpus as C

    rows, plans = {}, {}
    device = torch.device("cuda")
    for entry in C.ENTRIES:
        case = entry.cases[0]
        try:
            op = entry.op()
            args = case.make(device)
            op(*args)
            plan = op.trace(*args)
        except Exception as e:  # noqa: BLE001 - reported: the entry is not (yet) taken
            plans[entry.qualname] = f"not taken: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
            continue
        if entry.mutates_args:
            continue  # the wrapper writes its inputs: repeated calls would change them; timed elsewhere
        m = _medians({"tile": _py(lambda: op(*args)), "library": _py(lambda: entry.body(*args))}, iters, repeats)
        rows[entry.qualname] = {**m, "library_over_tile": m["library"] / m["tile"]}
        plans[entry.qualname] = {"views": len(plan.views), "aten_steps": [a.name for a in plan.aten_steps],
                                 "launches": len(plan.launches), "guards": len(plan.guards)}
    return rows, plans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("real_wrappers: needs a CUDA GPU")
        return
    os.makedirs(args.out, exist_ok=True)
    steps = step_costs(args.iters, args.repeats)
    rows, plans = corpus_rows(args.iters // 4, args.repeats)
    print(f"{'entry':44s} {'tile µs':>9s} {'library µs':>11s} {'library/tile':>13s}")
    for name, r in rows.items():
        print(f"{name:44s} {r['tile']:9.2f} {r['library']:11.2f} {r['library_over_tile']:13.2f}")
    for name, v in steps.items():
        print(f"{name:44s} {v:9.2f} µs/call")
    for name, p in plans.items():
        if isinstance(p, str):
            print(f"{name:44s} {p}")
    ratios = [r["library_over_tile"] for r in rows.values()]
    summary = {
        "entries_timed": len(rows),
        "min_library_over_tile": min(ratios) if ratios else None,
        "median_library_over_tile": statistics.median(ratios) if ratios else None,
        "view_step_over_plain_launch": steps["view_launch"] / steps["plain_launch"],
        # From C++ through the dispatcher: a view step's cost (about 1: no ATen call) and an ATen step's
        # against the caller making that call itself (at most 1).
        "cpp_view_launch_over_plain_launch": steps["C++ view_launch"] / steps["C++ plain_launch"],
        "cpp_aten_launch_over_to_copy_plus_plain_launch":
            steps["C++ aten_launch"] / steps["C++ aten::_to_copy + plain_launch"],
    }
    print("summary:", summary)
    write(args.out, "real_wrappers", {"rows": rows, "plans": plans, "step_costs_us": steps, "summary": summary},
          {name: r["tile"] for name, r in rows.items()} | {f"{n} (library)": r["library"] for n, r in rows.items()},
          xlabel="host µs per call", title="Real wrappers: tile op vs the library's wrapper (H200)", unit="µs")


if __name__ == "__main__":
    main()
