"""Host random numbers a body draws while it traces: from Python's ``random`` module or NumPy's global generator
(a dropout's seed, drawn in an autograd.Function's forward and kept for its backward). A launch plan would replay
the value this trace drew on every call, so such a body is refused (its calls run it in Python, drawing afresh as
eager does). Only draws are seen, never the values: the generators' states are compared before and after."""

from __future__ import annotations

import random
import sys
from typing import Any


def _numpy_state() -> Any:
    numpy = sys.modules.get("numpy")  # a program that never imported NumPy draws nothing from it
    return None if numpy is None else numpy.random.get_state(legacy=False)


def _same(a: Any, b: Any) -> bool:
    """Equality of two generator states (dicts of ints, strings, floats and arrays)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(a, numpy.ndarray):
        return numpy.array_equal(a, b)
    return a == b


class HostRandomness:
    """The host generators' states when it was made; ``drawn()`` names those drawn from since."""

    def __init__(self):
        self._python = random.getstate()
        self._numpy = _numpy_state()

    def drawn(self) -> list[str]:
        names = []
        if random.getstate() != self._python:
            names.append("Python's random module")
        if not _same(self._numpy, _numpy_state()):
            names.append("NumPy's global generator")
        return names
