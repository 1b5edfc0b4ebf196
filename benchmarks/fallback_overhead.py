"""Where a fallback call's host time goes, against the library's own call (CUDA only).

    python benchmarks/fallback_overhead.py [--entries CORPUS:NAME,...] [--iters N] [--repeats R]

For each corpus entry (tests/*corpus*.py) whose first case falls back, µs per call, rows interleaved within each
round (median over rounds), each row on its own arguments built alike:

  library        the entry's body called directly: the library's own launchers
  disable_dynamo the body under torch._disable_dynamo (every Python entry of torch_tile runs under it)
  direct         the body under torch_tile's DirectLaunches() (wrap_triton off, no launch mode)
  run_body       _fallback.run_body: the two above, the op-naming context and the result's schema check
  fallback_call  op._fallback_call: run_body, the interpreter-exit bookkeeping, the count and the warn-once check
  torch.ops      the op through the dispatcher: C++ plan selection, then the call into Python
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), HERE]

from _timing import _synced_seconds, interleaved_us  # noqa: E402

from torch_tile import _fallback  # noqa: E402
from torch_tile._launch_mode import DirectLaunches  # noqa: E402

DEFAULT = ("corpus_conch:copy_blocks,liger_corpus:cross_entropy,corpus_conch:scaled_gemm,"
           "corpus_cut_cross_entropy:linear_cross_entropy")


def rows_for(entry, device) -> dict:
    """name -> fn(n) returning the seconds n calls take."""
    op = entry.op()
    packet = getattr(getattr(torch.ops, entry.namespace), entry.name)
    case = entry.cases[0]
    packet(*case.make(device))  # the first call traces (to a fallback plan) and warns
    if not op.fallback_calls:
        raise RuntimeError(f"{entry.qualname} does not fall back: nothing to break down")
    reason = next(iter(op.fallback_calls))
    disabled = torch._disable_dynamo(entry.body)

    def under_direct(*args):
        with DirectLaunches():
            return entry.body(*args)

    calls = {
        "library": entry.body,
        "disable_dynamo": disabled,
        "direct": under_direct,
        "run_body": lambda *a: _fallback.run_body(op, op._values(a), on_cpu=False),
        "fallback_call": lambda *a: op._fallback_call(a, reason),
        "torch.ops": packet,
    }
    rows = {}
    for name, fn in calls.items():
        args = case.make(device)
        rows[name] = (lambda fn, args: lambda n: _synced_seconds(lambda: fn(*args), n))(fn, args)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", default=DEFAULT, help="comma-separated CORPUS:NAME")
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("fallback_overhead: needs a CUDA GPU (a fallback's cost is against the library's GPU launches)")
        return 0
    warnings.simplefilter("ignore")
    device = torch.device("cuda")
    header = None
    for spec in args.entries.split(","):
        corpus, name = spec.split(":")
        try:
            entry = next(e for e in importlib.import_module(corpus).ENTRIES if e.name == name)
            measured = interleaved_us(rows_for(entry, device), args.iters, args.repeats)
        except Exception as e:  # noqa: BLE001 - one entry's failure is reported, the others still run
            print(f"{spec:40s} {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        if header is None:
            header = f"{'entry':40s} " + " ".join(f"{n:>14s}" for n in measured)
            print(header)
        print(f"{entry.qualname:40s} " + " ".join(f"{m['median']:14.1f}" for m in measured.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
