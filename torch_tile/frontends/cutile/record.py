"""Records ``ct.launch(stream, grid, kernel, args)`` of a cuTile kernel in a
traced op body as a plan launch step: per array argument a pointer binding
whose key word holds cuTile's array bits (base alignment, disjoint elements,
per dimension stride divisible by 16 bytes, stride 1, size divisible by 16,
size 1; computed per call by the runtime as cuTile's launcher computes them)
and one unspecialised binding per size and per stride, per scalar one
binding, and the ``ct.Constant`` arguments' values in the launch
configuration."""

from __future__ import annotations

from typing import Any

from ... import _plan
from ...trace.expr import SymbolicInt
from ...trace.stand_ins import SymbolicFloat, TensorProxy
from ...trace.state import body_location
from ..launch_record import grid_expressions, value_binding
from .kernels import ArrayParam, ConstantParam, CutileLaunchConfig, ScalarParam, config_id, kernel_id

K = _plan.BindingKind


def _constant(tracer, where: str, value: Any):
    """A ct.Constant's value: fixed per plan (a size is guarded on its value)."""
    if isinstance(value, SymbolicInt):
        return bool(value.specialize()) if value.is_bool else value.specialize()
    if isinstance(value, SymbolicFloat):
        return value.specialize()
    if isinstance(value, (bool, int, float)):
        return value
    raise tracer.error(f"{where} is a ct.Constant; it must be an int, bool or float, got {value!r}")


def record_launch(tracer, kernel, grid: Any, args: Any, options: dict) -> _plan.LaunchStep:
    """Turns one ``ct.launch`` in a traced body into a plan step. The body's stream is not kept: the op
    launches on the current torch stream, as every tile op does."""
    name = kernel._pyfunc.__name__
    unknown = set(options) - {"stream", "programmatic_dependent_launch"}
    if unknown or options.get("programmatic_dependent_launch"):
        raise tracer.error(f"ct.launch of {name}: options {sorted(unknown) or ['programmatic_dependent_launch']} "
                           "are not supported in torch_tile op bodies")
    if not isinstance(args, tuple):
        raise tracer.error(f"ct.launch of {name}: the kernel arguments must be a tuple, got {type(args).__name__}")
    annotations = kernel._annotated_function.parameter_annotations
    names = list(kernel._annotated_function.pysig.parameters)
    if len(args) != len(annotations):
        raise tracer.error(f"ct.launch of {name}: {len(args)} arguments for {len(annotations)} parameters")
    params, bindings = [], []
    for i, (value, annotation) in enumerate(zip(args, annotations)):
        where = f"argument {names[i]!r} of cuTile kernel {name}"
        if getattr(annotation, "KIND", "leaf") != "leaf" or isinstance(value, (tuple, list)):
            raise tracer.error(f"{where}: tuple and list parameters are not supported")
        if annotation.constant:
            params.append(ConstantParam(_constant(tracer, where, value)))
        elif isinstance(value, TensorProxy):
            n = value.dim()
            if n < 1:
                raise tracer.error(f"{where}: a 0-d tensor; cuTile arrays have at least one dimension")
            array = annotation.array  # ct.ArrayAnnotation / ct.IndexedWithInt64, or None
            if array is not None and (getattr(array, "static_shape_dims", None) or
                                      getattr(array, "static_stride_dims", None)):
                raise tracer.error(f"{where}: static_shape_dims/static_stride_dims are not supported")
            index = getattr(array, "index_dtype", None)
            params.append(ArrayParam(n, index64=getattr(index, "name", "") == "int64"))
            bindings.append(value_binding(tracer, where, value, specialize=True, specialize_alignment=True,
                                          specialize_layout=True)[1])
            for dims in (value.shape, value.stride()):
                for d in dims:
                    bindings.append(value_binding(tracer, where, d, specialize=False, specialize_alignment=False)[1])
        else:
            bound = value_binding(tracer, where, value, specialize=False, specialize_alignment=False)
            if bound is None or bound[0] == K.TENSOR:
                raise tracer.error(f"{where}: unsupported value {value!r}; cuTile kernels take tensors, ints, bools, "
                                   "floats and ct.Constant values here")
            params.append(ScalarParam(int(bound[0])))
            bindings.append(bound[1])
    config = CutileLaunchConfig(kernel, tuple(params))
    site = body_location(*tracer.op.sources)
    grid_exprs = grid_expressions(tracer, grid if isinstance(grid, (tuple, list)) else (grid,),
                                  kernel._pyfunc.__name__, site)
    kid = kernel_id(kernel)  # the kernel's identity (its source, closures, globals) is read once per launch
    return _plan.LaunchStep(kid, config_id(config, kid), grid_exprs, bindings, site)
