"""Host time per call, as the benchmarks that compare launch paths measure it."""

from __future__ import annotations

import statistics
import time

import torch


def _synced_seconds(fn, iters: int) -> float:
    """Seconds for ``iters`` calls of ``fn``, synchronised at both ends (the GPU's work counts too)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def interleaved_us(measures: dict, iters: int, rounds: int) -> dict:
    """µs per call of each row, where ``measures[name](n)`` returns the seconds ``n`` calls take. The rows are
    measured in turn within each round (after a warm-up), so a slow spell of the machine hits all of them
    alike. Per row: the best, median and worst round."""
    for measure in measures.values():
        measure(max(iters // 10, 10))  # warm
    samples: dict = {name: [] for name in measures}
    for _ in range(rounds):
        for name, measure in measures.items():
            samples[name].append(measure(iters) / iters * 1e6)
    return {name: {"best": min(s), "median": statistics.median(s), "worst": max(s)} for name, s in samples.items()}


def replay_us(graph: torch.cuda.CUDAGraph, replays: int = 200) -> float:
    """µs per replay of a CUDA graph (GPU time between events, after one warm replay)."""
    graph.replay()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3 / replays


def host_us(fn, iters: int = 300, rounds: int = 5) -> float:
    """µs per call of ``fn``: ``iters`` calls synchronised at both ends, the best of ``rounds`` rounds."""
    return interleaved_us({"fn": lambda n: _synced_seconds(fn, n)}, iters, rounds)["fn"]["best"]
