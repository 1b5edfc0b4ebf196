"""``torch_tile.explain(op)``: what an op's calls run, plan by plan.

For each launch plan the native path holds (in the order they were added):
the guards that select it, its steps (allocations, views, ATen calls, kernel
launches with their lines in the body) or, for a fallback plan, why its calls
run the body in Python. Fallbacks met on paths that keep no plans (the CPU
path) are listed with their call counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from . import _C
from ._op import TileOp, registered_ops
from ._plan import StepKind


@dataclass
class PlanExplanation:
    """One plan: ``guards`` (their text), ``steps`` (one line each) and, for a fallback plan, ``fallback`` (why
    its calls run the body in Python; empty for a native plan); ``gradient``: for calls that need one, "native: "
    and the gradient op, or "in Python: " and why."""

    guards: list[str]
    steps: list[str]
    fallback: str = ""
    gradient: str = ""  # how calls that need a gradient differentiate ("" for a plan that keeps nothing for one)

    @property
    def native(self) -> bool:
        return not self.fallback


@dataclass
class Explanation:
    """What ``explain`` returns; ``str()`` of it is a readable report."""

    qualname: str
    plans: list[PlanExplanation]
    fallbacks: dict[str, int] = field(default_factory=dict)  # reason -> calls that ran the body for it

    def __str__(self) -> str:
        native = sum(p.native for p in self.plans)
        lines = [f"torch_tile op {self.qualname}: {len(self.plans)} plan(s), {native} native, "
                 f"{len(self.plans) - native} fallback"]
        for i, plan in enumerate(self.plans):
            lines.append(f"  plan {i}: " + ("native" if plan.native else "fallback: calls run the body in Python"))
            lines.append("    guards: " + ("; ".join(plan.guards) or "none"))
            if plan.native:
                lines += [f"    {step}" for step in plan.steps]
                if plan.gradient:
                    lines.append(f"    gradient: {plan.gradient}")
            else:
                lines.append(f"    because: {plan.fallback}")
        for why, calls in self.fallbacks.items():
            lines.append(f"  fallback calls ({calls}): {why}")
        return "\n".join(lines)


def explain(op: Union[TileOp, str]) -> Explanation:
    """The plans of ``op`` (a tile op, or its qualname ``"ns::name"``) and the fallbacks its calls met."""
    qualname = op.qualname if isinstance(op, TileOp) else op
    tile_op = op if isinstance(op, TileOp) else registered_ops().get(qualname)
    arg_names = tile_op.arg_names if tile_op is not None else None
    plans = [_explain_plan(p, arg_names) for p in _C.plans_of(qualname)]
    return Explanation(qualname, plans, dict(tile_op.fallback_calls) if tile_op is not None else {})


def _explain_plan(plan, arg_names) -> PlanExplanation:
    def name(slot: int) -> str:
        return arg_names[slot] if arg_names is not None and slot < len(arg_names) else f"tensor {slot}"

    guards = [f"{name(g.arg)}: {g.dtype}, rank {g.ndim}" for g in plan.tensor_guards]
    guards += [g.text for g in plan.guards]
    steps = []
    for step in plan.order:
        if step.kind == StepKind.ALLOC:
            a = plan.allocs[step.index]
            steps.append(f"allocate {a.dtype}" + (" (zeros)" if a.zero else ""))
        elif step.kind == StepKind.VIEW:
            steps.append(f"view of {name(plan.views[step.index].base)}")
        elif step.kind == StepKind.ATEN:
            a = plan.aten_steps[step.index]
            steps.append(f"{a.name}{'.' + a.overload if a.overload else ''} at {a.site}")
        elif step.kind == StepKind.READ:
            r = plan.reads[step.index]
            steps.append(f"read {r.count} value(s) of {name(r.slot)} from the data at {r.site}")
        elif step.kind == StepKind.CHECK:
            c = plan.checks[step.index]
            steps.append(f"check `{c.condition.text}` at {c.site} (else the body runs)")
        elif step.kind == StepKind.CONSTANT:
            c = plan.constants[step.index]
            steps.append(f"hold a {c.dtype} tensor of sizes {tuple(c.sizes)} the op did not take, used at {c.site}")
        else:
            launch = plan.launches[step.index]
            steps.append(f"launch {launch.kernel_name} at {launch.site}")
    spec = plan.backward
    gradient = "" if spec is None else f"native: {spec.gradient_op}" if spec.gradient_op else \
        f"in Python: {spec.reason}"
    return PlanExplanation(guards, steps, plan.fallback, gradient)
