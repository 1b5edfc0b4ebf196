"""Records ``kernel[grid](...)`` in a traced op body as a plan launch step:
each kernel parameter becomes a binding (a tensor slot, an expression, a
constant, a descriptor), the grid three expressions, and the launch site's
static part (constants, options) a launch configuration."""

from __future__ import annotations

from typing import Any

import torch
from triton.runtime.jit import JITFunction
from triton.tools.tensor_descriptor import TensorDescriptor

from ... import _descriptors, _plan
from ..._expr import INT64_MAX, INT64_MIN, SymbolicInt, encode_int
from ..._stand_ins import SymbolicFloat, TensorProxy
from ..._trace_state import body_location
from .kernels import LaunchConfig, config_id, kernel_id

K = _plan.BindingKind


# Option names Triton accepts as launch keywords besides kernel parameters.
_RESERVED_OPTIONS = {"grid", "warmup", "stream", "device"}


def record_launch(tracer, kernel, grid, args: tuple, kwargs: dict) -> tuple[_plan.LaunchStep, dict]:
    """Turns one ``kernel[grid](*args, **kwargs)`` in a traced body into a plan
    step; also returns the kernel's bound arguments (stand-ins) by parameter."""
    site = body_location(tracer.op.fn)
    if not isinstance(kernel, JITFunction):
        raise tracer.error(f"only @triton.jit kernels (or @triton.autotune over one) can be launched in an op body, "
                           f"got {type(kernel).__name__}")
    param_names = [p.name for p in kernel.params]
    options = {k: v for k, v in kwargs.items() if k not in param_names}
    bad = _RESERVED_OPTIONS.intersection(options)
    if bad:
        raise tracer.error(f"launch option(s) {sorted(bad)} are chosen by torch_tile (current device and stream)")
    for k, v in options.items():
        if isinstance(v, (SymbolicInt, SymbolicFloat)):
            options[k] = v.specialize()  # options are compile-time: guard on the value, as Dynamo would
        elif isinstance(v, TensorProxy):
            raise tracer.error(f"launch option {k}= must be a constant, got {v!r}")
    try:
        bound = kernel.signature.bind(*args, **{k: v for k, v in kwargs.items() if k in param_names})
    except TypeError as e:
        raise tracer.error(f"launch of {kernel.fn.__name__}: {e}") from None
    bound.apply_defaults()

    kinds, statics, bindings = [], {}, []
    for kp in kernel.params:
        kind, binding, static = _bind(tracer, kernel, kp, bound.arguments[kp.name])
        kinds.append(kind)
        if kind in (K.STATIC, K.TENSORDESC):
            statics[kp.name] = static
        bindings.append(binding)

    if callable(grid):
        grid = grid(dict(bound.arguments))
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise tracer.error(f"grid must be a tuple of 1 to 3 ints, got {grid!r}")
    grid_exprs = []
    for g in list(grid) + [1] * (3 - len(grid)):
        if not isinstance(g, (int, SymbolicInt)) or isinstance(g, bool):
            raise tracer.error(f"grid entries must be ints, got {g!r}")
        grid_exprs.append(_plan.expr(encode_int(g, tracer)))

    config = LaunchConfig(kernel, tuple(int(k) for k in kinds), statics, options)
    step = _plan.LaunchStep(kernel_id(kernel), config_id(config), grid_exprs, bindings, site)
    return step, dict(bound.arguments)


def _static() -> _plan.Binding:
    """The binding of a parameter fixed at trace time (its value is in the launch configuration)."""
    return _plan.Binding(K.STATIC)


def _bind(tracer, kernel, kp, value) -> tuple[Any, _plan.Binding, Any]:
    """(kind, binding, compile-time value for STATIC) of one parameter."""
    spec = not kp.do_not_specialize
    align = not kp.do_not_specialize_on_alignment
    where = f"parameter '{kp.name}' of {kernel.fn.__name__}"
    if kp.is_constexpr:
        if isinstance(value, SymbolicInt) and value.is_bool:
            return K.STATIC, _static(), bool(value.specialize())  # constexpr bools stay bools (guarded)
        if isinstance(value, SymbolicInt):
            return K.CONSTEXPR, _plan.Binding(K.CONSTEXPR, expr=_plan.expr(value.encode())), None
        if isinstance(value, SymbolicFloat):
            return K.STATIC, _static(), value.specialize()  # a compile-time float: guarded on its value
        if isinstance(value, TensorProxy):
            raise tracer.error(f"{where} is tl.constexpr but receives {value!r}")
        return K.STATIC, _static(), value
    if isinstance(value, TensorProxy):
        return K.TENSOR, _plan.Binding(K.TENSOR, value._slot, specialize=spec, specialize_alignment=align), None
    if isinstance(value, TensorDescriptor):
        binding, static = _descriptors.descriptor_binding(tracer, where, kp.name, value)
        return K.TENSORDESC, binding, static
    if isinstance(value, SymbolicInt):
        kind = K.BOOL if value.is_bool else K.INT
        binding = _plan.Binding(kind, expr=_plan.expr(value.encode()), specialize=spec, specialize_alignment=align)
        return kind, binding, None
    if isinstance(value, bool):
        return K.BOOL, _plan.Binding(K.BOOL, expr=_plan.expr(encode_int(int(value), tracer)), specialize=spec,
                                     specialize_alignment=align), None
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise tracer.error(f"{where} = {value} does not fit in int64")
        return K.INT, _plan.Binding(K.INT, expr=_plan.expr(encode_int(value, tracer)), specialize=spec,
                                    specialize_alignment=align), None
    if isinstance(value, float):
        return K.FLOAT, _plan.Binding(K.FLOAT, float_value=value, specialize=spec, specialize_alignment=align), None
    if isinstance(value, SymbolicFloat):
        return K.FLOAT, _plan.Binding(K.FLOAT, value.arg, specialize=spec, specialize_alignment=align), None
    if value is None:
        return K.STATIC, _static(), None
    if isinstance(value, torch.Tensor):
        raise tracer.error(f"{where} receives a tensor the op did not take or allocate")
    raise tracer.error(f"{where} receives an unsupported value {value!r} ({type(value).__name__})")
