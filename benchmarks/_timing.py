"""Host time per call, as the benchmarks that compare launch paths measure it."""

from __future__ import annotations

import time

import torch


def host_us(fn, iters: int = 300, rounds: int = 5) -> float:
    """µs per call of ``fn``: ``iters`` calls synchronised at both ends, the best of ``rounds`` rounds
    (after one warm call)."""
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / iters * 1e6)
    return best
