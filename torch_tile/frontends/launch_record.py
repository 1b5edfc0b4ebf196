"""What every frontend's launch recording shares: the grid as the plan's three
expressions, and the bindings of runtime values (tensors, ints, bools, floats)."""

from __future__ import annotations

from typing import Any, Optional

from .. import _C, _plan
from .._errors import CallError
from ..trace.call_arguments import KERNEL_DTYPES
from ..trace.expr import INT64_MAX, INT64_MIN, SymbolicInt, encode_int
from ..trace.stand_ins import SymbolicFloat, TensorProxy

K = _plan.BindingKind


def grid_expressions(tracer, grid: Any, kernel_name: str, site: str) -> list[_plan.Expr]:
    """``grid`` (a tuple or list of 1 to 3 ints, which may depend on sizes) as three plan expressions,
    missing dimensions 1; a TraceError otherwise. A dimension outside CUDA's limits on this call's values
    is a ValueError naming the op, kernel, launch site and value, as the executor's (which checks each call:
    the expressions serve every value; a CallError: the body run in Python would launch nothing, silently);
    0 is allowed and launches nothing, as in Triton."""
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise tracer.error(f"grid must be a tuple of 1 to 3 ints, got {grid!r}")
    exprs = []
    for d, g in enumerate(list(grid) + [1] * (3 - len(grid))):
        if not isinstance(g, (int, SymbolicInt)) or isinstance(g, bool):
            raise tracer.error(f"grid entries must be ints, got {g!r}")
        code, text = encode_int(g, tracer)
        value = g.value if isinstance(g, SymbolicInt) else g  # read, not guarded
        if not 0 <= value <= _C.MAX_GRID[d]:
            raise CallError(f"{tracer.op.qualname}: grid dimension {d} of kernel {kernel_name} (launched at {site}) "
                             f"is {value} (`{text}`); expected 0 to {_C.MAX_GRID[d]} (0 launches nothing)")
        exprs.append(_plan.expr((code, text)))
    return exprs


def value_binding(tracer, where: str, value: Any, specialize: bool, specialize_alignment: bool,
                  specialize_layout: bool = False) -> Optional[tuple[Any, _plan.Binding]]:
    """(kind, binding) of a runtime value passed to a kernel parameter: a tensor (its slot; keyed by cuTile's
    bits of its layout with ``specialize_layout``), an int or bool (an expression), a float; None for any
    other value, which the frontend handles or refuses."""
    flags = {"specialize": specialize, "specialize_alignment": specialize_alignment}
    if isinstance(value, TensorProxy):
        if value._meta.dtype not in KERNEL_DTYPES:
            raise tracer.error(f"{where} is a {value._meta.dtype} tensor: tile kernels take no complex tensors; "
                               "pass torch.view_as_real(t) (its real and imaginary parts as a last dimension of 2)",
                               kind=CallError)
        return K.TENSOR, _plan.Binding(K.TENSOR, value._slot, specialize_layout=specialize_layout, **flags)
    if isinstance(value, SymbolicInt):
        kind = K.BOOL if value.is_bool else K.INT
        return kind, _plan.Binding(kind, expr=_plan.expr(value.encode()), **flags)
    if isinstance(value, bool):
        return K.BOOL, _plan.Binding(K.BOOL, expr=_plan.expr(encode_int(int(value), tracer)), **flags)
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise tracer.error(f"{where} = {value} does not fit in int64")
        return K.INT, _plan.Binding(K.INT, expr=_plan.expr(encode_int(value, tracer)), **flags)
    if isinstance(value, float):
        return K.FLOAT, _plan.Binding(K.FLOAT, float_value=value, **flags)
    if isinstance(value, SymbolicFloat):
        return K.FLOAT, _plan.Binding(K.FLOAT, value.arg, **flags)
    return None
