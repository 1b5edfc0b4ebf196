"""Where a fallback call's host time goes, against the library's own call (CUDA only).

    python benchmarks/fallback_overhead.py [--entries CORPUS:NAME,...] [--iters N] [--repeats R]

For each corpus entry (tests/*corpus*.py) whose first case falls back, µs per call, rows interleaved within each
round (median over rounds), each row on its own arguments built alike:

  library        the entry's body called directly: the library's own launchers
  disable_dynamo the body under torch._disable_dynamo (every Python entry of torch_tile runs under it)
  direct         the body under torch_tile's DirectLaunches() (wrap_triton off, no launch mode)
  run_body       _fallback.run_body: the two above, the op-naming context and the result's schema check (C++)
  fallback_call  op._fallback_call: the body as run_body runs it (its result checked by the C++ caller instead), the
                 interpreter-exit bookkeeping and the count
  torch.ops      the op through the dispatcher: C++ plan selection, then the call into Python

Then, per entry, the op's call split by timing inside it: the dispatcher, plan selection and the Python entry
("C++ + entry": torch.ops minus the time inside ``body_result``), torch_tile's Python layers around the body, the body
inside the op, and the same body called alone; and the thread's state (dispatch keys, grad and inference mode,
torch-function and dispatch modes, current stream) inside the body where it differs from outside.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), HERE]

from _timing import _synced_seconds, interleaved_us  # noqa: E402

from torch_tile import _fallback  # noqa: E402
from torch_tile._launch_mode import DirectLaunches  # noqa: E402

DEFAULT = ("corpus_conch:copy_blocks,liger_corpus:cross_entropy,corpus_conch:nms,"
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


def _state() -> dict:
    """What can make the same torch calls cost more in one place than another: the thread's dispatch keys,
    modes and stream."""
    return {"include": str(torch._C._dispatch_tls_local_include_set()),
            "exclude": str(torch._C._dispatch_tls_local_exclude_set()),
            "grad": torch.is_grad_enabled(), "inference": torch.is_inference_mode_enabled(),
            "torch_function": torch._C._is_torch_function_enabled(),
            "dispatch_modes": torch._C._len_torch_dispatch_stack(),
            "stream": torch.cuda.current_stream().cuda_stream}


def split(entry, device, iters: int, rounds: int) -> dict:
    """µs per call (median of rounds): the op through torch.ops, the time inside ``body_result``, inside the body
    (``op.fn``), and the body called directly on arguments built alike; and the thread's state inside the body
    against outside it, where they differ."""
    op = entry.op()
    packet = getattr(getattr(torch.ops, entry.namespace), entry.name)
    a, b = entry.cases[0].make(device), entry.cases[0].make(device)
    packet(*a)
    if not op.fallback_calls:
        raise RuntimeError(f"{entry.qualname} does not fall back: nothing to split")
    inside = {"run_body": 0.0, "body": 0.0}
    seen: dict = {}
    body_result, body = _fallback.body_result, op.fn

    def timed_body_result(*args, **kwargs):
        start = time.perf_counter()
        try:
            return body_result(*args, **kwargs)
        finally:
            inside["run_body"] += time.perf_counter() - start

    def timed_body(*args, **kwargs):
        if "state" not in seen:
            seen["state"] = _state()
        start = time.perf_counter()
        try:
            return body(*args, **kwargs)
        finally:
            inside["body"] += time.perf_counter() - start

    samples: dict = {k: [] for k in ("torch.ops", "run_body", "body", "library")}
    _fallback.body_result, op.fn = timed_body_result, timed_body
    try:
        for _ in range(max(iters // 10, 5)):
            packet(*a)
            entry.body(*b)
        for _ in range(rounds):
            inside["run_body"] = inside["body"] = 0.0
            samples["torch.ops"].append(_synced_seconds(lambda: packet(*a), iters) / iters * 1e6)
            samples["run_body"].append(inside["run_body"] / iters * 1e6)
            samples["body"].append(inside["body"] / iters * 1e6)
            samples["library"].append(_synced_seconds(lambda: entry.body(*b), iters) / iters * 1e6)
    finally:
        _fallback.body_result, op.fn = body_result, body
    outside = _state()
    differs = {k: (v, outside[k]) for k, v in seen.get("state", {}).items() if v != outside[k]}
    return {**{k: statistics.median(v) for k, v in samples.items()}, "state inside/outside": differs}


def _entry(spec: str):
    """The corpus entry ``CORPUS:NAME`` names."""
    corpus, name = spec.split(":")
    return next(e for e in importlib.import_module(corpus).ENTRIES if e.name == name)


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
        try:
            entry = _entry(spec)
            measured = interleaved_us(rows_for(entry, device), args.iters, args.repeats)
        except Exception as e:  # noqa: BLE001 - one entry's failure is reported, the others still run
            print(f"{spec:40s} {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        if header is None:
            header = f"{'entry':40s} " + " ".join(f"{n:>14s}" for n in measured)
            print(header)
        print(f"{entry.qualname:40s} " + " ".join(f"{m['median']:14.1f}" for m in measured.values()))
    print(f"\n{'entry':40s} {'torch.ops':>10s} {'C++ + entry':>12s} {'layers':>8s} {'body in op':>11s} "
          f"{'body alone':>11s}  state inside the op that differs from outside")
    for spec in args.entries.split(","):
        try:
            entry = _entry(spec)
            m = split(entry, device, args.iters, args.repeats)
        except Exception as e:  # noqa: BLE001 - one entry's failure is reported, the others still run
            print(f"{spec:40s} {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        print(f"{entry.qualname:40s} {m['torch.ops']:10.1f} {m['torch.ops'] - m['run_body']:12.1f} "
              f"{m['run_body'] - m['body']:8.1f} {m['body']:11.1f} {m['library']:11.1f}  "
              f"{m['state inside/outside'] or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
