"""docs/BENCHMARKS.md from the committed results (benchmarks/<name>_<card>.json: the card it ran on, h100 or h200).

    python benchmarks/report.py [--out docs/BENCHMARKS.md] [--check]

Each benchmark writes its whole result as JSON (``_report.write``); this renders every committed file the same
way: the date, machine and versions of its run, then each measurement as a table
(flat ``{row: number}`` dicts, ``{row: {column: number}}`` dicts, lists of records) and each target met or not.
``--check`` exits 1 if the document is not what the JSON gives (a test runs it, so the two cannot drift).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(ROOT, "docs", "BENCHMARKS.md")
# What each benchmark measures, in a line (the script's docstring says how).
ABOUT = {
    "launch_overhead": "host µs per call of a 1K-element fp32 add through each launch path, rows interleaved in one "
                       "process",
    "frontends": "host µs per call of the same softmax written in Triton, CUDA C++ and cuTile, and of TileLang's "
                 "GEMM, as tile ops and through each language's own launcher or executor",
    "kernels": "GPU µs per call of the Hopper example kernels (TMA matmul, PDL layer norm, cooperative sum) "
               "against Triton's launcher and torch",
    "training_step": "ms per step of the tiny transformer (examples/train_tiny_transformer.py) in each mode",
    "warm_start": "ms from a fresh process's first call to its result, cold and warm caches",
    "bundle_load": "ms to load a bundle into a fresh process and finish the first launch",
    "real_wrappers": "public libraries' wrappers called unchanged in op bodies: native / fallback / failed, host "
                     "µs per call against the library's own call",
    "training_step_library": "ms per training step of a block built from Liger-Kernel's autograd.Functions "
                             "(examples/liger_functions.py): the library called directly, the same Functions through "
                             "tile ops, torch_tile's own kernels, torch; compiled and graph-replayed",
}
# The command of a result whose name is not its script's.
COMMAND = {"training_step_library": "benchmarks/training_step.py --library-only"}
_RESULT = re.compile(r"(?P<name>.+)_(?P<card>h\d00)\.json$")
_META = ("date", "device", "capability", "torch", "triton")
_SKIP = {"plans", "corpora", "launch_path_phases_ns", "phases_ns", "host_us_rounds",
         "first_launch_done_ms_all", "host_us_per_call_min_max", "ms_min_max", "loss_first_last"}


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
    if value is None:
        return "—"
    return str(value).replace("|", "\\|")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _table(key: str, value) -> list[str]:
    """A markdown table of one measurement, or nothing where it is not a table of numbers."""
    if isinstance(value, dict) and value and all(_is_number(v) or isinstance(v, (str, bool)) for v in value.values()):
        return [f"| {key} | |", "| --- | ---: |", *(f"| {k} | {_cell(v)} |" for k, v in value.items())]
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        columns = []
        for row in value.values():
            columns += [c for c, v in row.items() if c not in columns and not isinstance(v, (dict, list))]
        return [f"| {key} | " + " | ".join(columns) + " |", "| --- |" + " ---: |" * len(columns),
                *(f"| {k} | " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for k, row in value.items())]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        # Records (one per entry): their numbers and short words; long texts (reasons) stay in the JSON.
        columns = []
        for row in value:
            columns += [c for c, v in row.items() if c not in columns and (_is_number(v) or (
                isinstance(v, str) and len(v) <= 48))]
        return [f"| {' | '.join(columns)} |", "|" + " --- |" * len(columns),
                *(f"| {' | '.join(_cell(row.get(c)) for c in columns)} |" for row in value)]
    return []


def _targets(value: dict) -> list[str]:
    lines = []
    for name, met in value.items():
        if isinstance(met, dict):  # {"target": ..., "value": ..., "met": ...}
            state = {True: "met", False: "**not met**", None: "not measured"}[met.get("met")]
            lines.append(f"- {met.get('target', name)}: {met.get('value', '')} — {state}")
        else:
            lines.append(f"- {name}: {'met' if met else '**not met**'}")
    return lines


def section(path: str) -> list[str]:
    match = _RESULT.match(os.path.basename(path))
    name, card = match["name"], match["card"].upper()
    with open(path) as f:
        result = json.load(f)
    meta = ", ".join(f"{k} {result[k]}" for k in _META if k in result)
    lines = [f"## {name} ({card})", "", f"`{COMMAND.get(name, f'benchmarks/{name}.py')}`: {ABOUT.get(name, '')}.", "",
             f"Run: {meta or 'undated'}."]
    scalars, tables, targets = {}, [], []
    for key, value in result.items():
        if key in _META or key in _SKIP:
            continue
        if key in ("targets_met", "targets") and isinstance(value, dict):
            targets = ["", "Targets:", "", *_targets(value)]
        elif _is_number(value) or isinstance(value, (str, bool)):
            scalars[key] = value
        else:
            tables += ["", *_table(key, value)]
    return lines + (["", *_table("setting or result", scalars)] if scalars else []) + tables + targets + [""]


def render() -> str:
    lines = ["# Benchmarks", "",
             "Generated by `python benchmarks/report.py` from the committed `benchmarks/<name>_<card>.json`; do not "
             "edit.",
             "Each JSON is one run of its benchmark on the card its name gives (`bash dev/gpu_check.sh` with "
             "`BENCHMARKS=`).",
             "GPU machines differ by up to 1.5x between runs: compare rows within a run, not across files.",
             ""]
    for path in sorted(p for p in glob.glob(os.path.join(HERE, "*.json")) if _RESULT.match(os.path.basename(p))):
        lines += section(path)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="exit 1 if --out differs from what the JSON gives")
    args = parser.parse_args()
    text = render()
    if args.check:
        with open(args.out) as f:
            current = f.read()
        if current != text:
            print(f"{args.out} is out of date: run python benchmarks/report.py")
            return 1
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
