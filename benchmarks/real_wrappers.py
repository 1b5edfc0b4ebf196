"""Real wrappers as tile ops: what each corpus entry's calls do on CUDA, and host µs per call against the library.

    python benchmarks/real_wrappers.py [--iters N] [--repeats R] [--out DIR] [--corpora NAME,...]
    python benchmarks/real_wrappers.py --cpu-classify [--jobs 2] [--out DIR]   # no GPU: classification only
    python benchmarks/real_wrappers.py --corpora corpus_fla --entries 'rwkv|hgrn'  # some entries only

The corpora are tests/liger_corpus.py (Liger-Kernel and the Triton tutorials), tests/corpus_fla.py,
tests/corpus_conch.py, tests/corpus_cut_cross_entropy.py and tests/corpus_torchao.py (tests/wrapper_corpus.py is
their framework): each entry is a torch_tile op whose body calls a public library's host wrapper unchanged. A
corpus whose library is not installed is reported as skipped. Each corpus runs in its own subprocess, so that a
crash (a segfault, an illegal memory access) costs only that corpus: its entries not reached are reported as
"crashed" (the one in progress says so) and the run carries on with the next corpus.

For every entry, its first case (on CUDA every case can run) is called once through ``torch.ops.<ns>.<name>``,
which classifies the entry by what its calls do:

  * native: no fallback call counted, and the op holds a launch plan with launches or ATen steps (on CPU, whose
    path keeps no plans: the op's trace of the case is such a plan);
  * fallback: the op's ``fallback_calls`` grew (the body ran in Python; the reason is torch_tile's);
  * refused: the call raised the error the corpus's Refusal names (one whose ``falls_back`` is False: the op or
    the call is wrong, as torch.library would say too);
  * failed: any other exception, or a result that does not match the entry's torch reference (or its ``check``),
    as tests/test_real_wrappers.py checks it; on CUDA also an ``exact`` entry whose outputs are not the library's
    own, bit for bit;
  * crashed: the corpus's process died (or ran past --timeout) before the entry was done.

Then (CUDA only) native and fallback entries are timed: host µs per call of the op (``torch.ops``) against the
library's own call (``entry.body(*args)`` called directly: Triton's launcher), on separate argument sets built
alike, in interleaved rounds (median over --repeats rounds, after a warm-up: the classifying call already traced
and compiled both), and their ratio library / op. The calls per round are --iters, fewer for an entry whose one
call takes long (each entry's timing is kept to about --entry-seconds). Entries that write their inputs are timed
too (the same wrapper writes the same buffers on both sides).

Printed: a table per library (native / fallback / refused / failed / crashed counts; median and worst ratio for
native and for fallback entries), the entries that are not native with their reasons, and the targets,
met or not: >= 97% of wrappers give the right result (native or fallback); >= 90% native; 0 crashes; native calls
>= 3x faster than the library's own (median; the worst is stated too); a fallback call no slower than 1.1x the
library's own (library / op >= 1 / 1.1 for each). The shares are over the entries run (on CPU, skipped ones
left out); a refused entry gives no result. Writes real_wrappers.json (per entry: library, qualname, class,
reason, tile_us, library_us, ratio, its plan's steps) and real_wrappers.png (ratio per entry, coloured by class)
to --out.

Kept from before, timed in this process first: what a plan step costs. A body that only takes a view of its input
and launches (``view_launch``) against the same launch on the input itself (``plain_launch``), and a body with one
ATen step (``aten_launch``: ``.float()`` of an fp16 input) against its plan minus the step, made by the caller:
``aten::_to_copy`` then ``plain_launch`` on its output. Each is timed from Python (``torch.ops``) and from C++
through c10::Dispatcher with the GIL released (``_testing.bench_dispatcher_chain``), all interleaved in one run
(10 x --iters calls a round). The C++ rows are the acceptance check: a view step should cost nothing (view_launch /
plain_launch about 1) and an ATen step no more than the caller making the same dispatcher call (aten_launch /
(_to_copy + plain_launch) at most 1); both ratios are in the JSON summary.

``--cpu-classify`` needs no GPU and times nothing: it classifies every entry on CPU (the op's CPU path runs its
body under Triton's interpreter), on the first case that can run there; entries with ``cpu_skip`` or only
``gpu_only`` cases are reported as skipped. Corpora run in parallel subprocesses (--jobs, default 2); it writes
real_wrappers_cpu_classify.json to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import triton

import torch_tile as tt
from torch_tile.demo import host_seconds
from torch_tile import _testing

from _report import write
from _timing import interleaved_us

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.abspath(os.path.join(HERE, "..", "tests"))
sys.path.insert(0, TESTS)

import views_aten_ops as V  # noqa: E402

# The corpora (modules in tests/), each one library's, and the library's name for a corpus that crashes before it
# lists its entries (an entry's library is its op namespace: the Liger corpus holds the Triton tutorials' too).
CORPORA = {
    "liger_corpus": "liger",
    "corpus_fla": "fla",
    "corpus_conch": "conch",
    "corpus_cut_cross_entropy": "cce",
    "corpus_torchao": "torchao_tt",
}
CLASSES = ("native", "fallback", "refused", "failed", "crashed")
COLOURS = {"native": "#4c72b0", "fallback": "#dd8452", "refused": "#937860", "failed": "#c44e52",
           "crashed": "#000000", "skipped": "#bbbbbb"}

# The targets.
RIGHT_RESULT_SHARE = 0.97
NATIVE_SHARE = 0.90
NATIVE_SPEEDUP = 3.0
FALLBACK_SLOWDOWN = 1.1


def _py(fn):
    """A timer (calls -> seconds) for a Python callable."""
    return lambda n: host_seconds(fn, n)


def _cpp(steps: list):
    """A timer for a chain of dispatcher calls made from C++, the GPU idle before and drained after (as
    host_seconds does for Python)."""
    def timer(n: int) -> float:
        torch.cuda.synchronize()
        seconds = _testing.bench_dispatcher_chain(steps, n)
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


# -- one corpus, in its own process ---------------------------------------------------------------------------------


def _line(e: BaseException, limit: int = 400) -> str:
    """An exception as one line: its type and message, whitespace squashed, cut at ``limit`` characters."""
    text = " ".join(f"{type(e).__name__}: {e}".split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _expect(entry, case, result, device) -> None:
    """The result against the entry's reference (or its property check), on fresh arguments: as
    tests/test_real_wrappers.py checks it."""
    from wrapper_corpus import assert_matches

    args = case.make(device)
    if entry.check is not None:
        entry.check(result, args)
    else:
        assert_matches(result, entry.reference(*args), case, entry, entry.qualname)


def _plan_summary(plan) -> dict:
    return {"views": len(plan.views), "aten_steps": [a.name for a in plan.aten_steps],
            "launches": len(plan.launches), "guards": len(plan.guards)}


def _native_plan(op, case, device):
    """The plan with launches or ATen steps that the op's calls run, or None. On CUDA: among the plans the native
    path keeps; on CPU (whose path keeps none) the plan traced from the case's arguments."""
    if device.type == "cuda":
        plans = [p for p in op.plans() if not p.fallback and (p.launches or p.aten_steps)]
        return plans[0] if plans else None
    plan = op.trace(*case.make(device))
    return plan if not plan.fallback and (plan.launches or plan.aten_steps) else None


def classify(entry, case, device, library=None) -> dict:
    """What a call of the op does on ``device`` (see the module's docstring), from one call through
    ``torch.ops``; ``library``: the library's own result on these arguments, for an ``exact`` entry's bit-for-bit
    check (None: not checked). Returns the entry's row, without timings."""
    refusal = entry.refusal(case)
    row = {"class": None, "reason": "", "expected": "native", "corpus_reason": "", "plan": None, "warnings": []}
    if refusal is not None:
        row["expected"] = "fallback" if refusal[0].falls_back else "refused"
        row["corpus_reason"] = refusal[1]

    def raised(e: BaseException) -> dict:
        if (refusal is not None and not refusal[0].falls_back and isinstance(e, refusal[0].error)
                and re.search(refusal[0].match, str(e))):
            row.update({"class": "refused", "reason": _line(e)})
        else:
            row.update({"class": "failed", "reason": "raised " + _line(e)})
        return row

    try:
        op = entry.op()
        packet = getattr(getattr(torch.ops, entry.namespace), entry.name)
    except Exception as e:  # noqa: BLE001 - a definition torch_tile refuses: refused or failed, by the corpus
        return raised(e)
    before = dict(op.fallback_calls)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            result = packet(*case.make(device))
        except Exception as e:  # noqa: BLE001 - classified
            return raised(e)
        finally:
            # torch_tile's own warnings (a fallback's, a trace that did not hold); not the libraries' numerics.
            row["warnings"] = list(dict.fromkeys(" ".join(str(w.message).split())[:300] for w in seen
                                                 if str(w.message).startswith("torch_tile")))
    new = [why for why, n in op.fallback_calls.items() if n > before.get(why, 0)]
    if new:
        row.update({"class": "fallback", "reason": " | ".join(new)})
    else:
        try:
            plan = _native_plan(op, case, device)
        except Exception as e:  # noqa: BLE001 - the call ran no fallback, yet its trace fails
            row.update({"class": "failed", "reason": "the call counted no fallback, but its trace raised " + _line(e)})
            return row
        if plan is None:
            row.update({"class": "failed", "reason": "the call counted no fallback, but no plan holds a launch or an "
                                                     "ATen step"})
            return row
        row.update({"class": "native", "plan": _plan_summary(plan)})
    try:
        _expect(entry, case, result, device)
        if library is not None and entry.exact:
            from wrapper_corpus import assert_same_as_library

            assert_same_as_library(result, library, "the op")
    except Exception as e:  # noqa: BLE001 - AssertionError mostly; any error of the check is a wrong result
        ran = f"ran {row['class']}" + (f" ({row['reason']})" if row["reason"] else "")
        row.update({"class": "failed", "reason": f"{ran}, wrong result: {_line(e)}"})
    return row


def _time_entry(entry, case, device, iters: int, repeats: int, seconds: float) -> dict:
    """Host µs per call of the op (torch.ops) and of the library's own call, interleaved, median of ``repeats``
    rounds; ``iters`` calls a round, fewer where one call takes long (about ``seconds`` for the whole)."""
    packet = getattr(getattr(torch.ops, entry.namespace), entry.name)
    tile_args, library_args = case.make(device), case.make(device)
    tile = _py(lambda: packet(*tile_args))
    library = _py(lambda: entry.body(*library_args))
    one = []
    for fn in (lambda: packet(*tile_args), lambda: entry.body(*library_args)):
        fn()  # warm (the classifying call traced and compiled; this one runs these arguments' path)
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        one.append(time.perf_counter() - start)
    # Calls per round: the warm-up takes iters // 10 of each, each round iters of each.
    n = max(10, min(iters, int(seconds / (sum(one) * (repeats + 0.1)))))
    m = interleaved_us({"tile": tile, "library": library}, n, repeats)
    return {"tile_us": m["tile"]["median"], "library_us": m["library"]["median"],
            "ratio": m["library"]["median"] / m["tile"]["median"], "iters": n,
            "spread_us": {k: [v["best"], v["worst"]] for k, v in m.items()}}


def worker(corpus: str, mode: str, results: str, iters: int, repeats: int, seconds: float,
           entries_pattern: str = "") -> None:
    """Classifies (and on CUDA times) one corpus's entries, writing one JSON line per event to ``results``:
    "skipped" (the library is missing), "entries" (all of them, before any runs), "start" (an entry begins) and
    "row" (its result). The parent reads the file, also after a crash."""
    import importlib

    out = open(results, "a", buffering=1)

    def emit(**record) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()
        os.fsync(out.fileno())

    warnings.filterwarnings("ignore", category=RuntimeWarning, module="triton.runtime.interpreter")
    try:
        module = importlib.import_module(corpus)
    except BaseException as e:  # noqa: BLE001 - ImportError, or pytest's Skipped (a BaseException): no library
        if isinstance(e, ImportError) or type(e).__name__ == "Skipped":
            emit(kind="skipped", reason=_line(e))
            return
        raise
    entries = [e for e in module.ENTRIES if re.search(entries_pattern, e.qualname)]
    emit(kind="entries", entries=[{"qualname": e.qualname, "library": e.namespace, "wrapper": e.wrapper}
                                  for e in entries])
    device = torch.device("cuda", torch.cuda.current_device()) if mode == "cuda" else torch.device("cpu")
    for entry in entries:
        base = {"corpus": corpus, "library": entry.namespace, "qualname": entry.qualname, "wrapper": entry.wrapper,
                "mutates_args": bool(entry.mutates_args), "tile_us": None, "library_us": None, "ratio": None}
        cases = [c for c in entry.cases if mode == "cuda" or not c.gpu_only]
        skip = "" if mode == "cuda" else (entry.cpu_skip or ("" if cases else entry.cases[0].gpu_only))
        if skip:
            emit(kind="row", row={**base, "case": None, "class": "skipped", "reason": skip})
            continue
        case = cases[0]
        emit(kind="start", qualname=entry.qualname, case=case.id)
        row = {**base, "case": case.id}
        library = None
        if mode == "cuda":  # the library's own result: the bit-for-bit reference, and a check of the corpus itself
            try:
                library = entry.body(*case.make(device))
                _expect(entry, case, library, device)
            except Exception as e:  # noqa: BLE001 - reported: the corpus's own call is wrong on this machine
                row["library_error"] = _line(e)
                library = None
        row.update(classify(entry, case, device, library))
        if mode == "cuda" and row["class"] in ("native", "fallback") and "library_error" not in row:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    row.update(_time_entry(entry, case, device, iters, repeats, seconds))
                except Exception as e:  # noqa: BLE001 - reported: the class stands, the timing is missing
                    row["timing_error"] = _line(e)
        emit(kind="row", row=row)
    out.close()


# -- the run: corpora in subprocesses, then the report -----------------------------------------------------------


def _read_events(path: str) -> list:
    events = []
    if os.path.exists(path):
        with open(path) as f:
            for text in f:
                try:
                    events.append(json.loads(text))
                except json.JSONDecodeError:  # a line cut off by the crash
                    break
    return events


def _corpus_rows(corpus: str, events: list, how: str, log_tail: str) -> tuple[list, dict]:
    """The corpus's rows from its worker's events; entries it did not finish are "crashed" (``how``: why its
    process ended early; empty when it finished)."""
    info = {"corpus": corpus, "skipped": "", "ended": how or "finished", "log_tail": log_tail if how else ""}
    skipped = [e for e in events if e["kind"] == "skipped"]
    if skipped:
        info["skipped"] = skipped[0]["reason"]
        return [], info
    listed = next((e["entries"] for e in events if e["kind"] == "entries"), None)
    done = {e["row"]["qualname"]: e["row"] for e in events if e["kind"] == "row"}
    started = [e for e in events if e["kind"] == "start"]
    if listed is None:
        reason = f"the corpus's process ended ({how or 'without listing its entries'}) before listing its entries"
        return [{"corpus": corpus, "library": CORPORA[corpus], "qualname": f"{corpus} (import)", "case": None,
                 "class": "crashed", "reason": reason, "tile_us": None, "library_us": None, "ratio": None}], info
    rows = []
    in_progress, in_progress_case = None, None
    if started and started[-1]["qualname"] not in done:
        in_progress, in_progress_case = started[-1]["qualname"], started[-1]["case"]
    for e in listed:
        if e["qualname"] in done:
            rows.append(done[e["qualname"]])
            continue
        if e["qualname"] == in_progress:
            reason = f"the corpus's process ended during this entry ({how})"
        else:
            reason = f"not reached: the corpus's process ended ({how}) during {in_progress or 'its setup'}"
        rows.append({"corpus": corpus, "library": e["library"], "qualname": e["qualname"], "wrapper": e["wrapper"],
                     "case": in_progress_case if e["qualname"] == in_progress else None, "class": "crashed",
                     "reason": reason, "tile_us": None, "library_us": None,
                     "ratio": None})
    return rows, info


def _how_it_ended(rc: int | None, timed_out: bool, timeout: float) -> str:
    if timed_out:
        return f"ran past --timeout {timeout:g} s and was killed"
    if rc is None or rc == 0:
        return ""
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def run_corpora(corpora: list, mode: str, jobs: int, timeout: float, iters: int, repeats: int,
                seconds: float, entries_pattern: str = "") -> tuple[list, list]:
    """Runs each corpus in a subprocess of this script (``jobs`` at a time), each in its own process group,
    killed (that group) past ``timeout`` seconds; returns all rows and one record per corpus."""
    workdir = tempfile.mkdtemp(prefix="real_wrappers_")
    root = os.path.abspath(os.path.join(HERE, ".."))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, TESTS, HERE] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PYTHONUNBUFFERED"] = "1"
    if mode == "cpu" and jobs > 1:
        env.setdefault("OMP_NUM_THREADS", "1")  # the processes share the cores
    pending, running, finished = list(corpora), {}, {}
    while pending or running:
        while pending and len(running) < jobs:
            corpus = pending.pop(0)
            results, log = (os.path.join(workdir, f"{corpus}.{ext}") for ext in ("jsonl", "log"))
            command = [sys.executable, os.path.abspath(__file__), "--worker", corpus, "--mode", mode,
                       "--results", results, "--iters", str(iters), "--repeats", str(repeats),
                       "--entry-seconds", str(seconds), "--entries", entries_pattern]
            with open(log, "w") as log_file:
                process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env,
                                           start_new_session=True)
            running[corpus] = (process, time.monotonic(), results, log)
            print(f"[{time.strftime('%H:%M:%S')}] {corpus}: started (pid {process.pid})", flush=True)
        time.sleep(0.5)
        for corpus, (process, start, results, log) in list(running.items()):
            timed_out = timeout > 0 and time.monotonic() - start > timeout and process.poll() is None
            if timed_out:
                os.killpg(process.pid, signal.SIGKILL)  # the group this process leads: it and what it started
            rc = process.poll() if not timed_out else process.wait()
            if rc is None:
                continue
            del running[corpus]
            with open(log, errors="replace") as f:
                tail = "\n".join(f.read().splitlines()[-15:])
            how = _how_it_ended(rc, timed_out, timeout)
            finished[corpus] = _corpus_rows(corpus, _read_events(results), how, tail)
            rows = finished[corpus][0]
            print(f"[{time.strftime('%H:%M:%S')}] {corpus}: {how or 'finished'} after {time.monotonic() - start:.0f} s,"
                  f" {len(rows)} entries" + (f"\n{tail}" if how and tail else ""), flush=True)
    shutil.rmtree(workdir, ignore_errors=True)  # what a crash left in its log is in the corpus's record
    rows, infos = [], []
    for corpus in corpora:
        rows += finished[corpus][0]
        infos.append(finished[corpus][1])
    return rows, infos


def _ratio_stats(rows: list, cls: str) -> dict:
    timed = [r for r in rows if r["class"] == cls and r.get("ratio") is not None]
    if not timed:
        return {"n": 0, "median": None, "worst": None, "worst_entry": None}
    worst = min(timed, key=lambda r: r["ratio"])
    return {"n": len(timed), "median": statistics.median(r["ratio"] for r in timed), "worst": worst["ratio"],
            "worst_entry": worst["qualname"]}


def summarise(rows: list) -> dict:
    """Counts per class (and skipped, on CPU) and the ratio statistics of native and fallback entries."""
    counts = {c: sum(r["class"] == c for r in rows) for c in (*CLASSES, "skipped")}
    return {"entries": len(rows), **counts, "native_ratio": _ratio_stats(rows, "native"),
            "fallback_ratio": _ratio_stats(rows, "fallback")}


def targets(total: dict, timed: bool) -> dict:
    """The targets over every entry run (skipped ones left out), each with its value and whether it is
    met (None: not measured)."""
    run = total["entries"] - total["skipped"]
    right = total["native"] + total["fallback"]
    share = (lambda k: k / run) if run else (lambda k: 0.0)
    result = {
        "right_result": {"target": f">= {RIGHT_RESULT_SHARE:.0%} of wrappers give the right result (native or "
                                   "fallback)", "value": f"{share(right):.1%} ({right}/{run})",
                         "met": share(right) >= RIGHT_RESULT_SHARE},
        "native": {"target": f">= {NATIVE_SHARE:.0%} native", "value": f"{share(total['native']):.1%} "
                                                                       f"({total['native']}/{run})",
                   "met": share(total["native"]) >= NATIVE_SHARE},
        "crashes": {"target": "0 crashes", "value": str(total["crashed"]), "met": total["crashed"] == 0},
    }
    native, fallback = total["native_ratio"], total["fallback_ratio"]
    if not timed:
        value = "not measured (--cpu-classify times nothing)"
        result["native_speedup"] = {"target": f"native >= {NATIVE_SPEEDUP:g}x faster per call than the library's "
                                              "own (median)", "value": value, "met": None}
        result["fallback_slowdown"] = {"target": f"fallback no slower than {FALLBACK_SLOWDOWN:g}x the library's own "
                                                 "call", "value": value, "met": None}
        return result
    result["native_speedup"] = {
        "target": f"native >= {NATIVE_SPEEDUP:g}x faster per call than the library's own (median)",
        "value": (f"median {native['median']:.2f}x, worst {native['worst']:.2f}x ({native['worst_entry']}), "
                  f"{native['n']} timed") if native["n"] else "no native entry timed",
        "met": native["n"] > 0 and native["median"] >= NATIVE_SPEEDUP}
    result["fallback_slowdown"] = {
        "target": f"fallback no slower than {FALLBACK_SLOWDOWN:g}x the library's own call (library/op >= "
                  f"{1 / FALLBACK_SLOWDOWN:.3f} for each)",
        "value": (f"worst library/op {fallback['worst']:.3f} ({fallback['worst_entry']}), median "
                  f"{fallback['median']:.2f}, {fallback['n']} timed") if fallback["n"] else "no fallback entry timed",
        "met": fallback["n"] == 0 or fallback["worst"] >= 1 / FALLBACK_SLOWDOWN}
    return result


def _fmt(stats: dict) -> str:
    return f"{stats['median']:.2f} / {stats['worst']:.2f}" if stats["n"] else "-"


def print_report(rows: list, infos: list, libraries: dict, total: dict, goals: dict, mode: str) -> None:
    columns = [*CLASSES] + (["skipped"] if mode == "cpu" else [])
    head = f"{'library':18s} {'entries':>7s} " + " ".join(f"{c:>8s}" for c in columns)
    if mode == "cuda":
        head += f" {'native lib/op med / worst':>26s} {'fallback lib/op med / worst':>28s}"
    print("\n" + head)
    for name, s in [*libraries.items(), ("all", total)]:
        line = f"{name:18s} {s['entries']:7d} " + " ".join(f"{s[c]:8d}" for c in columns)
        if mode == "cuda":
            line += f" {_fmt(s['native_ratio']):>26s} {_fmt(s['fallback_ratio']):>28s}"
        print(line)
    for info in infos:
        if info["skipped"]:
            print(f"{info['corpus']}: skipped ({info['skipped']})")
        elif info["ended"] != "finished":
            print(f"{info['corpus']}: its process ended early: {info['ended']}")
    if mode == "cuda":
        print(f"\n{'entry':48s} {'class':>8s} {'tile µs':>9s} {'library µs':>11s} {'library/tile':>13s}")
        for r in rows:
            if r.get("ratio") is not None:
                print(f"{r['qualname']:48s} {r['class']:>8s} {r['tile_us']:9.2f} {r['library_us']:11.2f} "
                      f"{r['ratio']:13.2f}")
    skipped = {}
    for r in rows:
        if r["class"] == "skipped":
            skipped.setdefault(r["reason"], []).append(r["qualname"])
    if skipped:
        print(f"\nskipped on CPU ({sum(map(len, skipped.values()))}), by reason:")
        for reason, names in skipped.items():
            print(f"  {', '.join(names)}: {reason}")
    others = [r for r in rows if r["class"] not in ("native", "skipped")]
    print(f"\nnot native ({len(others)}):")
    for r in others:
        note = "" if r["class"] == r.get("expected", r["class"]) else f" [the corpus expects {r['expected']}]"
        print(f"  {r['qualname']} [{r['case']}]: {r['class']}{note}: {r['reason']}")
    unexpected = [r for r in rows if r["class"] == "native" and r.get("expected", "native") != "native"]
    for r in unexpected:
        print(f"  {r['qualname']} [{r['case']}]: native, but the corpus expects {r['expected']} ({r['corpus_reason']})")
    for r in rows:
        for key in ("library_error", "timing_error"):
            if r.get(key):
                print(f"  {r['qualname']}: {key.replace('_', ' ')}: {r[key]}")
    print("\ntargets:")
    for goal in goals.values():
        met = {True: "met", False: "NOT MET", None: "not measured"}[goal["met"]]
        print(f"  {goal['target']}: {goal['value']}: {met}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=200,
                        help="calls per round of each corpus entry (the step rows: 10x); fewer for slow calls")
    parser.add_argument("--repeats", type=int, default=5, help="rounds (median over them)")
    parser.add_argument("--entry-seconds", type=float, default=1.0,
                        help="about how long one entry's timing may take (caps its calls per round)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated, of: " + ", ".join(CORPORA))
    parser.add_argument("--entries", default="",
                        help="a regular expression: only entries whose qualname it matches (re.search) run")
    parser.add_argument("--cpu-classify", action="store_true",
                        help="classify every entry on CPU (Triton's interpreter); no timing, no GPU needed")
    parser.add_argument("--jobs", type=int, default=None,
                        help="corpora run at a time (default: 1 on CUDA, where they are timed; 2 on CPU)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds a corpus may run before it is killed and its unfinished entries reported as "
                             "crashed (default: 900 on CUDA, 1800 on CPU; 0: none)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.mode, args.results, args.iters, args.repeats, args.entry_seconds, args.entries)
        return
    mode = "cpu" if args.cpu_classify else "cuda"
    if mode == "cuda" and not torch.cuda.is_available():
        print("real_wrappers: needs a CUDA GPU (or --cpu-classify, which classifies on CPU and times nothing)")
        return
    corpora = [c for c in args.corpora.split(",") if c]
    unknown = [c for c in corpora if c not in CORPORA]
    if unknown:
        parser.error(f"unknown corpora {unknown}; known: {', '.join(CORPORA)}")
    jobs = args.jobs or (1 if mode == "cuda" else 2)
    timeout = args.timeout if args.timeout is not None else (900 if mode == "cuda" else 1800)
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    steps = step_costs(args.iters * 10, args.repeats) if mode == "cuda" else {}
    rows, infos = run_corpora(corpora, mode, jobs, timeout, args.iters, args.repeats, args.entry_seconds,
                              args.entries)
    report(rows, infos, steps, mode, args.out, time.monotonic() - started)


def report(rows: list, infos: list, steps: dict, mode: str, out_dir: str, wall: float) -> None:
    """Prints the tables and the targets; writes the JSON (and, with timings, the PNG) to ``out_dir``."""
    libraries = {}
    for r in rows:
        libraries.setdefault(r["library"], []).append(r)
    libraries = {name: summarise(lib_rows) for name, lib_rows in libraries.items()}
    total = summarise(rows)
    goals = targets(total, timed=mode == "cuda")
    for name, v in steps.items():
        print(f"{name:48s} {v:9.2f} µs/call")
    print_report(rows, infos, libraries, total, goals, mode)
    print(f"\nwall time: {wall:.0f} s")
    timed = [r for r in rows if r.get("ratio") is not None]
    summary = {"mode": mode, "wall_s": wall, "entries": total["entries"], "entries_timed": len(timed)}
    if steps:
        summary.update({
            "view_step_over_plain_launch": steps["view_launch"] / steps["plain_launch"],
            # From C++ through the dispatcher: a view step's cost (about 1: no ATen call) and an ATen step's
            # against the caller making that call itself (at most 1).
            "cpp_view_launch_over_plain_launch": steps["C++ view_launch"] / steps["C++ plain_launch"],
            "cpp_aten_launch_over_to_copy_plus_plain_launch":
                steps["C++ aten_launch"] / steps["C++ aten::_to_copy + plain_launch"],
        })
    result = {"summary": summary, "targets": goals, "libraries": libraries, "total": total, "corpora": infos,
              "entries": rows, "step_costs_us": steps}
    if mode == "cpu" or not timed:
        path = os.path.join(out_dir, "real_wrappers_cpu_classify.json" if mode == "cpu" else "real_wrappers.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {path}" + ("" if mode == "cpu" else " (no entry timed: no PNG)"))
        return
    write(out_dir, "real_wrappers", result, {r["qualname"]: r["ratio"] for r in timed},
          xlabel="library µs / tile op µs per call (host; > 1: the op is faster)",
          title="Real wrappers: the library's own call over the tile op (H200)", unit="x",
          colours={r["qualname"]: COLOURS[r["class"]] for r in timed},
          legend={c: COLOURS[c] for c in ("native", "fallback") if any(r["class"] == c for r in timed)},
          lines=[1 / FALLBACK_SLOWDOWN, 1.0, NATIVE_SPEEDUP])


if __name__ == "__main__":
    main()
