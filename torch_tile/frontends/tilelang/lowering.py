"""What TileLang says about calling and launching a compiled kernel, read where TileLang's own launchers read it.

``signature(kernel)``: the ``JITKernel``'s PrimFunc parameters (buffers with their dtype, shape and strides, whose
dynamic symbols the call's tensors bind; scalars) and its ``out_idx``, which its call allocates.
``lowering(kernel)``: the kernel lowered again for its own target and pass configs (the host module a compiled
``JITKernel`` keeps is TileLang's compiled runtime module, not IR): per device kernel, in the order the host
function launches them, its parameters (buffer pointers, TMA descriptors, symbols), grid (expressions over the
symbols), block, dynamic shared memory and launch attributes, and the CUDA source of them all. TileLang imports
only here, and only for a kernel a body calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from ... import _process_locks

Expr = Any  # a TVM PrimExpr


@dataclass(frozen=True)
class BufferParam:
    index: int  # among the PrimFunc's parameters
    name: str
    data: str  # the buffer's data variable: how lowered kernels and descriptors name the tensor
    dtype: torch.dtype
    shape: tuple  # PrimExprs (ints or over dynamic symbols)
    strides: tuple  # () for a compact (row-major) buffer


@dataclass(frozen=True)
class ScalarParam:
    index: int
    name: str
    dtype: str  # TVM's: "int32", "float32", ...


@dataclass(frozen=True)
class Signature:
    name: str  # the PrimFunc's global symbol
    params: tuple  # BufferParam | ScalarParam, in the PrimFunc's order
    out_idx: tuple  # indices of the parameters the call allocates and returns

    def buffer(self, data: str) -> Optional[BufferParam]:
        return next((p for p in self.params if isinstance(p, BufferParam) and p.data == data), None)


@dataclass(frozen=True)
class TensorMapParam:
    """A ``__grid_constant__ CUtensorMap`` parameter: TileLang's ``__tvm_tensormap_create_tiled`` arguments."""

    name: str
    data: str  # the buffer whose memory it maps
    data_type: int  # CUtensorMapDataType
    global_dim: tuple  # PrimExprs, innermost first
    global_stride_bytes: tuple  # PrimExprs, innermost first (the first is the element size)
    box: tuple  # ints, innermost first
    element_strides: tuple
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


@dataclass(frozen=True)
class KernelParam:
    kind: str  # "pointer" (a buffer's data), "tensormap", "scalar" (a symbol or scalar parameter)
    name: str
    dtype: str  # TVM's, for pointers and scalars
    tensor_map: Optional[TensorMapParam] = None


@dataclass(frozen=True)
class DeviceKernel:
    name: str  # the extern "C" entry point
    params: tuple  # KernelParam, in the kernel's order
    grid: tuple  # 3 PrimExprs
    block: tuple  # 3 PrimExprs
    shared: int  # dynamic shared memory, bytes
    cluster: Optional[tuple]
    cooperative: bool
    pdl: bool


@dataclass(frozen=True)
class Lowering:
    source: str  # the CUDA source of every device kernel
    target: Any  # TileLang's tvm Target
    kernels: tuple  # DeviceKernel, in launch order


# (id(kernel), ...) -> (kernel, what was read of it): the kernel is kept, so an id is never another kernel's.
_lock = _process_locks.lock()
_signatures: dict[tuple, tuple[Any, Signature]] = {}
_lowerings: dict[tuple, tuple[Any, Lowering]] = {}


def once_per_kernel(cache: dict, kernel: Any, make: Callable[[], Any], *key: Any) -> Any:
    """``make()`` the first time ``kernel`` (and ``key``) is asked for in ``cache``, which keeps the kernel alive."""
    full_key = (id(kernel), *key)
    with _lock:
        known = cache.get(full_key)
    if known is not None:
        return known[1]
    result = make()
    with _lock:
        return cache.setdefault(full_key, (kernel, result))[1]


def _tvm():
    import tvm  # TileLang's own TVM (imported with tilelang)
    return tvm


def torch_dtype(tvm_dtype: str) -> torch.dtype:
    """The torch dtype of a TileLang buffer dtype, as TileLang's own KernelParam maps it."""
    from tilelang.engine.param import KernelParam as TLParam
    return TLParam(_tvm().DataType(str(tvm_dtype)), []).torch_dtype()


def signature(kernel) -> Signature:
    """``kernel``'s parameters and outputs (once per kernel object)."""
    return once_per_kernel(_signatures, kernel, lambda: _signature(kernel))


def _signature(kernel) -> Signature:
    func = kernel.prim_func
    params = []
    for i, p in enumerate(func.params):
        buffer = func.buffer_map.get(p)
        if buffer is not None:
            params.append(BufferParam(i, buffer.name, buffer.data.name, torch_dtype(buffer.dtype),
                                      tuple(buffer.shape), tuple(buffer.strides)))
        else:
            params.append(ScalarParam(i, p.name, str(p.dtype)))
    out_idx = tuple(int(i) for i in (kernel.out_idx or ()))
    name = str(func.attrs["global_symbol"]) if func.attrs is not None and "global_symbol" in func.attrs else "main"
    return Signature(name, tuple(params), out_idx)


# -- expressions ---------------------------------------------------------------------------------------------------

def _fold(op: Callable) -> Callable:
    return lambda e, ev: op(ev(e.a), ev(e.b))


# TVM's Div and Mod are C's truncation, which TileLang emits only on non-negative operands (sizes), where it is
# floor division.
_BINARY = {
    "Add": _fold(lambda a, b: a + b), "Sub": _fold(lambda a, b: a - b), "Mul": _fold(lambda a, b: a * b),
    "FloorDiv": _fold(lambda a, b: a // b), "FloorMod": _fold(lambda a, b: a % b),
    "Div": _fold(lambda a, b: a // b), "Mod": _fold(lambda a, b: a % b),
}


def evaluate(expr: Expr, values: dict, min_max: tuple[Callable, Callable] = (min, max)) -> Any:
    """``expr`` (a TVM integer expression) on ``values`` (symbol name -> int or SymbolicInt): the same arithmetic on
    the tracer's stand-ins records plan expressions. A KeyError names an unbound symbol; a NotImplementedError an
    expression of another kind."""
    kind = type(expr).__name__

    def ev(e):
        return evaluate(e, values, min_max)

    if isinstance(expr, (int, bool)):
        return int(expr)
    if kind == "IntImm":
        return int(expr.value)
    if kind in ("Var", "SizeVar"):
        return values[expr.name]
    if kind in _BINARY:
        return _BINARY[kind](expr, ev)
    if kind == "Min":
        return min_max[0](ev(expr.a), ev(expr.b))
    if kind == "Max":
        return min_max[1](ev(expr.a), ev(expr.b))
    if kind == "Cast" and str(expr.dtype).startswith(("int", "uint")):
        return ev(expr.value)
    raise NotImplementedError(f"TileLang expression `{expr}` ({kind})")


# -- lowering ------------------------------------------------------------------------------------------------------

def lowering(kernel) -> Lowering:
    """``kernel`` lowered as TileLang lowers it for its own execution (same PrimFunc, target and pass configs:
    the same device source), once per kernel object."""
    return once_per_kernel(_lowerings, kernel, lambda: _lower(kernel))


def _lower(kernel) -> Lowering:
    import tilelang
    tvm = _tvm()
    with tvm.transform.PassContext(opt_level=3, config=dict(kernel.pass_configs or {})), kernel.target:
        artifact = tilelang.lower(kernel.prim_func, target=kernel.target)
    return _read(artifact, kernel.target)


def _host_calls(host_func) -> list:
    """The host function's ``call_packed`` calls, in program order."""
    tvm = _tvm()
    calls = []

    def visit(node):
        if isinstance(node, tvm.tirx.Call) and getattr(node.op, "name", "") == "tirx.tvm_call_packed":
            calls.append(node)
    tvm.tirx.stmt_functor.post_order_visit(host_func.body, visit)
    return calls


def _tensor_map(name: str, args) -> TensorMapParam:
    kind = str(args[0].value)
    if kind != "__tvm_tensormap_create_tiled":
        raise NotImplementedError(f"TMA descriptor {name} is {kind} (torch_tile maps tiled descriptors)")
    rank = int(args[3])
    rest = list(args[5:])
    ints = [int(v) for v in rest[2 * rank:]]
    return TensorMapParam(
        name=name, data=args[4].name, data_type=int(args[2]),
        global_dim=tuple(rest[:rank]), global_stride_bytes=tuple(rest[rank:2 * rank]),
        box=tuple(ints[:rank]), element_strides=tuple(ints[rank:2 * rank]),
        interleave=ints[2 * rank], swizzle=ints[2 * rank + 1], l2_promotion=ints[2 * rank + 2],
        oob_fill=ints[2 * rank + 3])


def _read(artifact, target) -> Lowering:
    tvm = _tvm()
    [host] = list(artifact.host_mod.functions.values())
    descriptors = {var.name: _tensor_map(var.name, list(args))
                   for var, args in dict(host.attrs.get("tma_descriptor_args", {}) or {}).items()}
    device = {gv.name_hint: f for gv, f in artifact.device_mod.functions.items()}
    order = [str(c.args[0].value) for c in _host_calls(host)]
    kernels = []
    for name in [n for n in order if n in device]:
        f = device[name]
        attrs = f.attrs
        extents = dict(attrs["thread_extent"]) if "thread_extent" in attrs else {}
        grid = tuple(extents.get(f"blockIdx.{a}", 1) for a in "xyz")
        block = tuple(extents.get(f"threadIdx.{a}", 1) for a in "xyz")
        params = []
        for p in f.params:
            annotation = p.type_annotation
            if p.name in descriptors:
                params.append(KernelParam("tensormap", p.name, "", descriptors[p.name]))
            elif isinstance(annotation, tvm.ir.PointerType):
                params.append(KernelParam("pointer", p.name, str(annotation.element_type.dtype)))
            else:
                params.append(KernelParam("scalar", p.name, str(p.dtype)))
        cluster = attrs.get("cluster_dims") if "cluster_dims" in attrs else None
        kernels.append(DeviceKernel(
            name=name, params=tuple(params), grid=grid, block=block,
            shared=int(attrs["dyn_shared_memory_buf"]) if "dyn_shared_memory_buf" in attrs else 0,
            cluster=tuple(int(c) for c in cluster) if cluster is not None else None,
            cooperative="use_cooperative_groups" in attrs and bool(attrs["use_cooperative_groups"]),
            pdl="has_cuda_pdl_sync" in attrs))
    return Lowering(source=artifact.kernel_source, target=target, kernels=tuple(kernels))


def arch_capability(target) -> Optional[int]:
    """The compute capability TileLang compiles for (``sm_90a`` -> 90), None when the target names none."""
    arch = str(target.attrs.get("arch", "")) if hasattr(target, "attrs") else ""
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return int(digits) if arch.startswith("sm_") and digits else None
