"""Launch plans (``torch_tile._plan.LaunchPlan``, C++ objects without value
equality) as plain Python data, so that tests can compare whole plans and
their parts by value. Every field of the plan format is included."""

from __future__ import annotations

from typing import Any, Optional


def expr_data(e) -> Optional[tuple]:
    """(code, text) of a plan expression; None for no expression."""
    return None if e is None else (tuple(e.code), e.text)


def desc_data(d) -> Optional[dict]:
    if d is None:
        return None
    return {"shape": [expr_data(e) for e in d.shape], "strides": [expr_data(e) for e in d.strides],
            "nan_padding": d.nan_padding, "round_tf32": d.round_tf32, "name": d.name}


def binding_data(b) -> dict:
    return {"kind": int(b.kind), "slot": b.slot, "expr": expr_data(b.expr), "float_value": b.float_value,
            "specialize": b.specialize, "specialize_alignment": b.specialize_alignment,
            "specialize_layout": b.specialize_layout, "desc": desc_data(b.desc)}


def alloc_data(a) -> dict:
    return {"kind": int(a.kind), "shape": [expr_data(e) for e in a.shape], "like_slot": a.like_slot,
            "dtype": a.dtype, "zero": a.zero}


def launch_data(step) -> dict:
    return {"kernel": step.kernel, "kernel_name": step.kernel_name, "config": step.config,
            "grid": [expr_data(e) for e in step.grid], "bindings": [binding_data(b) for b in step.bindings],
            "site": step.site}


def tensor_guards(plan) -> list[tuple]:
    """(arg, dtype, ndim) of each tensor guard."""
    return [(g.arg, g.dtype, g.ndim) for g in plan.tensor_guards]


def plan_data(plan) -> dict[str, Any]:
    """The whole plan as nested plain data (equal exactly when the plans are)."""
    return {
        "tensor_guards": tensor_guards(plan),
        "guards": [expr_data(g) for g in plan.guards],
        "num_shape_guards": plan.num_shape_guards,
        "allocs": [alloc_data(a) for a in plan.allocs],
        "launches": [launch_data(step) for step in plan.launches],
        "outputs": list(plan.outputs),
    }
