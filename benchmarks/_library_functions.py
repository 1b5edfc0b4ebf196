"""The library-Functions rows of benchmarks/training_step.py: a decoder-style block built from Liger-Kernel's
autograd.Functions (examples/liger_functions.py), one training step (forward, backward, SGD) in each way:

* eager: the library's Functions called directly; the same Functions through tile ops; torch_tile's own kernels
  with native backwards; plain torch (interleaved step by step, median ms; synchronised per step);
* compiled: ``torch.compile`` of the tile-op model (fullgraph) and of the library's model;
* graph-replayed: the whole step captured in one CUDA graph, the tile-op model's and the library's (the same
  kernels: the floor), µs per replay;

with the runtime's host entries and fallback calls per step of the tile-op model, and whether its gradients equal
the library's bit for bit.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

from liger_functions import MODES, loss_of, models  # noqa: E402
from _timing import replay_us  # noqa: E402

ROWS, DIM, HIDDEN, LAYERS = 1024, 256, 512, 4


def _step(model, optimizer, x) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    loss = loss_of(model, x)
    loss.backward()
    optimizer.step()
    return loss


def _timed_steps(runs: dict, x: torch.Tensor, steps: int) -> dict:
    """Median ms per step of each run, one step of each in turn."""
    samples: dict = {name: [] for name in runs}
    for i in range(steps + 5):
        for name, (model, optimizer) in runs.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            _step(model, optimizer, x)
            torch.cuda.synchronize()
            if i >= 5:
                samples[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(s) for name, s in samples.items()}


def _graphed(model, optimizer, x):
    """The whole step captured in a CUDA graph (after warm-up on a side stream, as torch's recipe does)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            _step(model, optimizer, x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss = loss_of(model, x)
        loss.backward()
        optimizer.step()
    return graph, loss


def _replay_us(graphs: dict) -> dict:
    """Median µs per replay of each graph over rounds that take turns."""
    samples: dict = {name: [] for name in graphs}
    for _ in range(5):
        for name, (graph, _) in graphs.items():
            samples[name].append(replay_us(graph, replays=100))
    return {name: statistics.median(s) for name, s in samples.items()}


def _gradients_equal(a, b, x) -> bool:
    for model in (a, b):
        model.zero_grad(set_to_none=True)
        loss_of(model, x).backward()
    return all(torch.equal(p.grad, q.grad) for p, q in zip(a.parameters(), b.parameters()))


def library_functions(steps: int) -> dict:
    import torch_tile as tt

    x = torch.randn(ROWS, DIM, device="cuda")
    sizes = dict(dim=DIM, hidden=HIDDEN, layers=LAYERS)
    runs = {mode: (m, torch.optim.SGD(m.parameters(), lr=1e-3)) for mode, m in models(MODES, **sizes).items()}
    pair = models(("liger", "liger_tile"), **sizes)
    equal = _gradients_equal(pair["liger"], pair["liger_tile"], x)
    eager = _timed_steps(runs, x, steps)

    model, optimizer = runs["liger_tile"]
    before = tt.runtime_counters()
    for _ in range(10):
        _step(model, optimizer, x)
    torch.cuda.synchronize()
    after = tt.runtime_counters()
    per_step = {name: (after[name] - before[name]) / 10 for name in ("host_entries", "fallback_calls", "traces",
                                                                      "compiles")}

    compiled_models = models(("liger", "liger_tile"), **sizes)
    compiled = {}
    for mode, m in compiled_models.items():
        compiled_step = torch.compile(m, fullgraph=(mode == "liger_tile"))
        compiled[f"{mode} compiled"] = (_CompiledModel(compiled_step, m), torch.optim.SGD(m.parameters(), lr=1e-3))
    compiled_ms = _timed_steps(compiled, x, max(steps // 2, 10))

    graphs = {f"{mode} graph": _graphed(m, torch.optim.SGD(m.parameters(), lr=1e-3), x)
              for mode, m in models(("liger", "liger_tile"), **sizes).items()}
    replay = _replay_us(graphs)
    step_ms = {**eager, **compiled_ms}
    ratios = {
        "liger_tile_over_tile": step_ms["liger_tile"] / step_ms["tile"],
        "liger_over_liger_tile": step_ms["liger"] / step_ms["liger_tile"],
        "liger_tile_compiled_over_liger_compiled": step_ms["liger_tile compiled"] / step_ms["liger compiled"],
        "liger_tile_graph_over_liger_graph": replay["liger_tile graph"] / replay["liger graph"],
    }
    return {
        "sizes": dict(rows=ROWS, **sizes),
        "step_ms": step_ms,
        "graph_replay_us_per_step": replay,
        "liger_tile_per_step": per_step,
        "gradients_equal_liger": equal,
        "ratios": ratios,
        "targets_met": {
            "library Functions through tile ops <= 1.1x torch_tile's own kernels":
                ratios["liger_tile_over_tile"] <= 1.1,
            "library Functions through tile ops >= 1.7x faster than the library":
                ratios["liger_over_liger_tile"] >= 1.7,
            "0 host entries per step": per_step["host_entries"] == 0,
            "graph replay within 10% of the library's graph (floor)":
                ratios["liger_tile_graph_over_liger_graph"] <= 1.10,
            "compiled step <= torch.compile of the library": ratios["liger_tile_compiled_over_liger_compiled"] <= 1.0,
            "gradients bit-identical to the library's": equal,
        },
    }


class _CompiledModel:
    """A compiled forward with its module's parameters (what the step's loss and optimizer use)."""

    def __init__(self, compiled, module):
        self.compiled, self.module = compiled, module

    def __call__(self, x):
        return self.compiled(x)

    def parameters(self):
        return self.module.parameters()


def print_rows(result: dict) -> None:
    print(f"--- library Functions (Liger-Kernel), block {result['sizes']}")
    for name, ms in result["step_ms"].items():
        print(f"{name:22s} {ms:8.3f} ms/step")
    for name, us in result["graph_replay_us_per_step"].items():
        print(f"{name:22s} {us:8.1f} µs/replay")
    print("liger_tile per step: " + ", ".join(f"{k} {v:g}" for k, v in result["liger_tile_per_step"].items()))
    print(f"gradients equal the library's bit for bit: {result['gradients_equal_liger']}")
    for name, value in result["ratios"].items():
        print(f"{name:42s} {value:6.2f}")
    for name, ok in result["targets_met"].items():
        print(f"target {name}: {'met' if ok else 'NOT met'}")
