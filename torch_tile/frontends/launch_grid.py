"""A launch's grid as the plan's three expressions (every frontend's launches)."""

from __future__ import annotations

from typing import Any

from .. import _plan
from .._expr import SymbolicInt, encode_int


def grid_expressions(tracer, grid: Any) -> list[_plan.Expr]:
    """``grid`` (a tuple or list of 1 to 3 ints, which may depend on sizes) as three plan expressions,
    missing dimensions 1; a TraceError otherwise."""
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise tracer.error(f"grid must be a tuple of 1 to 3 ints, got {grid!r}")
    exprs = []
    for g in list(grid) + [1] * (3 - len(grid)):
        if not isinstance(g, (int, SymbolicInt)) or isinstance(g, bool):
            raise tracer.error(f"grid entries must be ints, got {g!r}")
        exprs.append(_plan.expr(encode_int(g, tracer)))
    return exprs
