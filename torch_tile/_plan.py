"""The launch-plan format in Python: every kind, code and structure comes from
the C++ runtime, where the format is defined once (csrc/runtime/plan/launch_plan.h,
bound in csrc/python/plan_bindings.cpp). The tracer builds these objects
directly and C++ takes them as they are. docs/ARCHITECTURE.md, "The launch
plan", describes each field."""

from __future__ import annotations

from . import _C

ExprOp = _C.ExprOp
BindingKind = _C.BindingKind
AllocKind = _C.AllocKind
ArgKind = _C.ArgKind
is_optional = _C.is_optional  # the C++ runtime's rules for optional argument kinds
value_kind = _C.value_kind
StepKind = _C.StepKind
AtenArgKind = _C.AtenArgKind
key_word = _C.key_word

Expr = _C.Expr
TensorGuard = _C.TensorGuard
AllocStep = _C.AllocStep
DescriptorBinding = _C.DescriptorBinding
Binding = _C.Binding
LaunchStep = _C.LaunchStep
ViewStep = _C.ViewStep
AtenArg = _C.AtenArg
AtenStep = _C.AtenStep
ReadStep = _C.ReadStep
ConstantStep = _C.ConstantStep
CheckStep = _C.CheckStep
PlanStep = _C.PlanStep
LaunchPlan = _C.LaunchPlan
BackwardSpec = _C.BackwardSpec


def expr(encoded: tuple) -> Expr:
    """A plan expression from the tracer's (code, text) pair (``_expr.encode_int``)."""
    code, text = encoded
    return Expr([int(c) for c in code], text)


__all__ = ["ExprOp", "BindingKind", "AllocKind", "ArgKind", "is_optional", "value_kind", "StepKind", "AtenArgKind",
           "key_word", "Expr", "TensorGuard", "AllocStep", "DescriptorBinding", "Binding", "LaunchStep", "ViewStep",
           "AtenArg", "AtenStep", "ReadStep", "CheckStep", "ConstantStep", "PlanStep", "LaunchPlan", "BackwardSpec",
           "expr"]
