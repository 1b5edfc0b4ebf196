"""Records ``kernel[grid](...)`` in a traced op body as a plan launch step:
each kernel parameter becomes a binding (a tensor slot, an expression, a
constant, a descriptor), a tuple parameter one binding per leaf (``tuples``),
the grid three expressions, and the launch site's static part (constants,
options, tuple structures) a launch configuration."""

from __future__ import annotations

from typing import Any

import torch
import triton.language as tl
from triton.runtime.jit import JITFunction
from triton.tools.tensor_descriptor import TensorDescriptor

from ... import _plan
from . import descriptors, pointers
from ...trace.expr import SymbolicInt
from ...trace.stand_ins import SymbolicFloat, TensorProxy
from ...trace.state import body_location
from ..launch_record import grid_expressions, value_binding
from .kernels import LaunchConfig, config_id, kernel_id
from .tuples import leaf_name, leaves, map_leaves, shape_of

K = _plan.BindingKind


# Option names Triton accepts as launch keywords besides kernel parameters.
_RESERVED_OPTIONS = {"grid", "warmup", "stream", "device"}


def record_launch(tracer, kernel, grid, args: tuple, kwargs: dict) -> tuple[_plan.LaunchStep, dict]:
    """Turns one ``kernel[grid](*args, **kwargs)`` in a traced body into a plan
    step; also returns the kernel's bound arguments (stand-ins) by parameter."""
    site = body_location(*tracer.op.sources)
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

    kinds, statics, bindings, tuples = [], {}, [], {}
    for kp in kernel.params:
        if not kp.is_constexpr:  # the kernel's pointers, as what they point at (also for the analysis of writes)
            where = f"parameter '{kp.name}' of {kernel.fn.__name__}"
            bound.arguments[kp.name] = map_leaves(lambda leaf: _pointed_at(tracer, where, leaf),
                                                  bound.arguments[kp.name])
        value = bound.arguments[kp.name]
        if isinstance(value, tuple) and not kp.is_constexpr:  # one binding per leaf, depth first
            tuples[kp.name] = shape_of(value)
        for path, leaf in (leaves(value) if kp.name in tuples else [((), value)]):
            name = leaf_name(kp.name, path)
            kind, binding, static = _bind(tracer, kernel, kp, name, leaf, in_tuple=kp.name in tuples)
            kinds.append(kind)
            if kind in (K.STATIC, K.TENSORDESC):
                statics[name] = static
            bindings.append(binding)

    if callable(grid):
        grid = grid(dict(bound.arguments))
    grid_exprs = grid_expressions(tracer, grid, kernel.fn.__name__, site)

    config = LaunchConfig(kernel, tuple(int(k) for k in kinds), statics, options, tuples)
    step = _plan.LaunchStep(kernel_id(kernel), config_id(config), grid_exprs, bindings, site)
    return step, dict(bound.arguments)


def _pointed_at(tracer, where: str, value: Any) -> Any:
    """A pointer object (``pointers``) as the view of the tensor memory it points at; any other value unchanged."""
    if not pointers.is_pointer_object(value):
        return value
    dtype = pointers.element_dtype(value)
    if dtype is None:
        raise tracer.error(f"{where} receives a pointer {value!r} to {value.dtype!r}, which no torch dtype a launch "
                           "plan passes matches")
    return tracer.pointer_view(value.data_ptr(), dtype, where)


def _static() -> _plan.Binding:
    """The binding of a parameter fixed at trace time (its value is in the launch configuration)."""
    return _plan.Binding(K.STATIC)


def _compile_time(tracer, where: str, value: Any) -> Any:
    """A tl.constexpr parameter's value (or a tl.constexpr leaf's) with the
    symbolic values inside it specialised: guarded on their value, as Dynamo would."""
    if isinstance(value, tuple):
        return map_leaves(lambda item: _compile_time(tracer, where, item), value)
    if isinstance(value, tl.constexpr):
        inner = _compile_time(tracer, where, value.value)
        return value if inner is value.value else tl.constexpr(inner)
    if isinstance(value, SymbolicInt):
        return bool(value.specialize()) if value.is_bool else value.specialize()
    if isinstance(value, SymbolicFloat):
        return value.specialize()
    if isinstance(descriptors.tensor_of(value), TensorProxy):
        raise tracer.error(f"{where} is a compile-time constant but receives {value!r}")
    return value


def _bind(tracer, kernel, kp, name: str, value, in_tuple: bool) -> tuple[Any, _plan.Binding, Any]:
    """(kind, binding, compile-time value for STATIC and TENSORDESC) of one
    parameter, or of the leaf ``name`` of a tuple parameter (``in_tuple``)."""
    # Triton's binder specialises a tuple's leaves with its default rules: the
    # parameter's do_not_specialize(_on_alignment) does not reach them.
    spec = in_tuple or not kp.do_not_specialize
    align = in_tuple or not kp.do_not_specialize_on_alignment
    where = f"parameter '{name}' of {kernel.fn.__name__}"
    if kp.is_constexpr:
        if isinstance(value, SymbolicInt) and value.is_bool:
            return K.STATIC, _static(), bool(value.specialize())  # constexpr bools stay bools (guarded)
        if isinstance(value, SymbolicInt):
            return K.CONSTEXPR, _plan.Binding(K.CONSTEXPR, expr=_plan.expr(value.encode())), None
        if isinstance(value, TensorProxy):
            raise tracer.error(f"{where} is tl.constexpr but receives {value!r}")
        return K.STATIC, _static(), _compile_time(tracer, where, value)
    if isinstance(value, tl.constexpr):  # a constant leaf (Triton folds it into the code)
        return K.STATIC, _static(), _compile_time(tracer, where, value)
    if isinstance(value, TensorDescriptor):
        binding, static = descriptors.descriptor_binding(tracer, where, name, value)
        return K.TENSORDESC, binding, static
    bound = value_binding(tracer, where, value, spec, align)
    if bound is not None:
        return (*bound, None)
    if value is None:
        return K.STATIC, _static(), None
    if isinstance(value, torch.Tensor):
        raise tracer.error(f"{where} receives a tensor the op did not take or allocate")
    if isinstance(value, list):
        raise tracer.error(f"{where} receives a list {value!r}; Triton takes tuples (pass tuple(...))")
    raise tracer.error(f"{where} receives an unsupported value {value!r} ({type(value).__name__})")
