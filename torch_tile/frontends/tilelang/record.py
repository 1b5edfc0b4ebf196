"""Records one device kernel of a TileLang ``JITKernel`` call in a traced op body as a plan launch step: per
kernel parameter, as TileLang's lowering passes it, a pointer binding (a buffer's tensor), a TMA descriptor
binding (the buffer's tensor with the descriptor's global sizes and strides, which TileLang derives from the
buffer: expressions over the call's sizes) or a symbol's value; the grid as TileLang's thread extents over the
symbols. Nothing is specialised per call: TileLang compiled the kernel for its dtypes and static sizes, which
the call's binding checked (``launches.bind_call``, whose symbols the launch carries)."""

from __future__ import annotations

from typing import Any

from ... import _plan
from ...trace.expr import encode_int, sym_max, sym_min
from ...trace.state import body_location
from ..launch_record import grid_expressions, value_binding
from .kernels import config_id, kernel_id
from .launches import DeviceKernelLaunch
from .lowering import BufferParam, DeviceKernel, TensorMapParam, evaluate, lowering, signature

K = _plan.BindingKind
# What the runtime encodes besides sizes, strides, box and swizzle (as TileLang's tiled TMA copies set them):
# element strides 1, no interleave, L2 promotion 128 bytes, no out-of-bounds fill.
_RUNTIME_TENSOR_MAP = {"interleave": 0, "l2_promotion": 2, "oob_fill": 0}


def _expr(tracer, value) -> _plan.Expr:
    return _plan.expr(encode_int(value, tracer))


def _tensor_map_binding(tracer, where: str, tm: TensorMapParam, buffer: BufferParam, tensor, symbols: dict):
    for field, value in _RUNTIME_TENSOR_MAP.items():
        if getattr(tm, field) != value:
            raise tracer.error(f"{where}: TMA descriptor {tm.name} has {field}={getattr(tm, field)}; torch_tile "
                               f"encodes {field}={value}")
    if any(s != 1 for s in tm.element_strides):
        raise tracer.error(f"{where}: TMA descriptor {tm.name} has element strides {list(tm.element_strides)}; "
                           "torch_tile encodes 1")
    size = buffer.dtype.itemsize
    shape = [evaluate(d, symbols, (sym_min, sym_max)) for d in reversed(tm.global_dim)]
    strides_bytes = [evaluate(s, symbols, (sym_min, sym_max)) for s in reversed(tm.global_stride_bytes)]
    strides = [s // size for s in strides_bytes]  # elements; the innermost entry is the element size: 1
    desc = _plan.DescriptorBinding([_expr(tracer, s) for s in shape], [_expr(tracer, s) for s in strides],
                                   False, False, tm.name)
    return _plan.Binding(K.TENSORDESC, tensor._slot, desc=desc)


def record_launch(tracer, launch: DeviceKernelLaunch, grid: Any, values: tuple, kwargs: dict) -> _plan.LaunchStep:
    """Device kernel ``launch.index`` of a ``JITKernel`` call whose parameters are ``values`` (PrimFunc order,
    outputs allocated) as a plan step. The op launches on the current torch stream, as every tile op does."""
    kernel = launch.kernel
    sig = signature(kernel)
    dk: DeviceKernel = lowering(kernel).kernels[launch.index]
    symbols = launch.symbols
    site = body_location(*tracer.op.sources)
    bindings = []
    for p in dk.params:
        where = f"parameter {p.name!r} of TileLang kernel {dk.name}"
        if p.kind == "scalar":
            if p.name not in symbols:
                raise tracer.error(f"{where}: symbol {p.name} is bound by no argument")
            bound = value_binding(tracer, where, symbols[p.name], specialize=False, specialize_alignment=False)
            if bound is None or bound[0] == K.TENSOR:
                raise tracer.error(f"{where}: unsupported value {symbols[p.name]!r}")
            bindings.append(bound[1])
            continue
        data = p.tensor_map.data if p.kind == "tensormap" else p.name
        buffer = sig.buffer(data)
        if buffer is None:
            raise tracer.error(f"{where}: its memory ({data}) is no tensor parameter of {sig.name}")
        tensor = values[buffer.index]
        if p.kind == "tensormap":
            bindings.append(_tensor_map_binding(tracer, where, p.tensor_map, buffer, tensor, symbols))
        else:
            bindings.append(value_binding(tracer, where, tensor, specialize=False, specialize_alignment=False)[1])
    for name, dims in (("block", dk.block), ("cluster", dk.cluster or ())):
        if any(type(d).__name__ not in ("int", "IntImm") for d in dims):
            raise tracer.error(f"TileLang kernel {dk.name}: its {name} ({list(dims)}) depends on the call")
    if dk.cluster is not None and any(int(c) != 1 for c in dk.cluster):
        raise tracer.error(f"TileLang kernel {dk.name} launches clusters of {list(dk.cluster)} blocks, which "
                           "torch_tile plans do not launch")
    grid_values = [evaluate(g, symbols, (sym_min, sym_max)) for g in dk.grid]
    grid_exprs = grid_expressions(tracer, grid_values, dk.name, site)
    kid = kernel_id(kernel, launch.index)
    return _plan.LaunchStep(kid, config_id(kernel, launch.index, kid), grid_exprs, bindings, site)
