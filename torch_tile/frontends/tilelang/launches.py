"""A ``JITKernel`` called in an op body, ``kernel(a, b)`` as TileLang users call it: to the thread's launch mode
(``_launch_mode`` turns this routing on while bodies run; only where the program imported tilelang, whose
``JITKernel.__call__`` it replaces meanwhile). The call is bound as TileLang's own executor binds it (the
non-output parameters in PrimFunc order, dynamic symbols from the tensors' sizes and strides, each checked
against the buffer's declaration); the ``out_idx`` outputs are allocated here (``torch.empty`` of the buffer's
shape on the first tensor's device, as TileLang does), so a trace records them, a fake run makes fake tensors,
and the mode gets every parameter."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import torch

from ..._errors import CallError
from ..._launch_mode import LaunchMode, add_routing, attribute_routing, current_mode
from ...trace.expr import SymbolicInt, sym_max, sym_min
from ...trace.stand_ins import SymbolicFloat
from .lowering import BufferParam, ScalarParam, Signature, evaluate, lowering, signature


def _the_op(mode: LaunchMode) -> str:
    op = getattr(mode, "op", None)
    return getattr(op, "qualname", "torch_tile op")


@dataclass(frozen=True, eq=False)
class DeviceKernelLaunch:
    """One device kernel of a ``JITKernel``'s call (TileLang may lower a function to several, launched in order):
    what a recording mode is handed, once per device kernel."""

    kernel: Any  # the JITKernel
    index: int  # into its lowering's kernels
    symbols: dict  # symbol name -> value, as the call bound them (``bind_call``)


def bind_call(sig: Signature, args: tuple, mode: Optional[LaunchMode]) -> tuple[list, dict]:
    """Every parameter's value in PrimFunc order, the outputs allocated, of a call with the non-output arguments
    ``args``, and the symbols they bind. A call TileLang would refuse (count, dtype, rank, a size or stride that is
    not the declared one) is a CallError naming the op, kernel, parameter, expected and got."""
    inputs = [p for p in sig.params if p.index not in sig.out_idx]
    if len(args) != len(inputs):
        allocated = [p.name for p in sig.params if p.index in sig.out_idx]
        _refuse(sig, mode, f"takes {len(inputs)} arguments ({', '.join(p.name for p in inputs)}"
                f"{'; ' + ', '.join(allocated) + ' allocated by the call' if allocated else ''}), got {len(args)}")
    values: list[Any] = [None] * len(sig.params)
    for p, a in zip(inputs, args):
        values[p.index] = a
    symbols = bind_symbols(sig, values, mode)
    device = next((values[p.index].device for p in sig.params
                   if isinstance(p, BufferParam) and p.index not in sig.out_idx), None)
    for i in sig.out_idx:
        p = sig.params[i]
        if not isinstance(p, BufferParam):
            _refuse(sig, mode, f"out_idx names parameter {p.name}, a scalar")
        try:
            shape = [evaluate(s, symbols, (sym_min, sym_max)) for s in p.shape]
        except KeyError as e:
            _refuse(sig, mode, f"the size of output {p.name} depends on symbol {e.args[0]}, which no input binds")
        if device is None:  # no tensor input: TileLang's current device
            device = torch.device("cuda", torch.cuda.current_device())
        values[i] = torch.empty(shape, dtype=p.dtype, device=device)
    return values, symbols


def _refuse(sig: Signature, mode: Optional[LaunchMode], message: str):
    raise CallError(f"{_the_op(mode)}: TileLang kernel {sig.name}: {message}")


def bind_symbols(sig: Signature, values: list, mode: Optional[LaunchMode]) -> dict:
    """Symbol name -> value, as TileLang's executor binds them from the call's inputs (``values``: every parameter,
    outputs not looked at), each input checked against its buffer's declaration."""
    def refuse(message: str):
        _refuse(sig, mode, message)

    inputs = [p for p in sig.params if p.index not in sig.out_idx]
    symbols: dict[str, Any] = {}
    for p in inputs:  # scalar parameters first: TileLang binds a symbol that is a parameter from the parameter
        if isinstance(p, ScalarParam):
            if isinstance(values[p.index], torch.Tensor):
                refuse(f"parameter {p.name} is a {p.dtype} scalar, got a tensor")
            symbols[p.name] = values[p.index]
    buffers = [p for p in inputs if isinstance(p, BufferParam)]
    for p in buffers:
        t = values[p.index]
        if not isinstance(t, torch.Tensor):
            refuse(f"parameter {p.name} is a {p.dtype} tensor, got {type(t).__name__}")
        if t.dtype != p.dtype:
            refuse(f"parameter {p.name} must be {p.dtype}, got {t.dtype}")
        if t.dim() != len(p.shape):
            refuse(f"parameter {p.name} must have {len(p.shape)} dimensions, got {t.dim()}")
    min_max = (sym_min, sym_max)

    def check_or_bind(p: BufferParam, what: str, j: int, declared, actual, size_one_passes: bool = False) -> None:
        """``actual`` binds ``declared`` (an unbound symbol) or must equal it; a stride of a dimension of one
        element may be anything (TileLang's check), asked second so that the common call guards on the stride."""
        if type(declared).__name__ in ("Var", "SizeVar") and declared.name not in symbols:
            symbols[declared.name] = actual
            return
        expected = evaluate(declared, symbols, min_max)
        if not bool(actual == expected) and not (size_one_passes and bool(values[p.index].shape[j] == 1)):
            refuse(f"parameter {p.name}: {what}[{j}] must be {expected} (`{declared}`), got {actual}")

    for p in buffers:
        for j, declared in enumerate(p.shape):
            check_or_bind(p, "size", j, declared, values[p.index].shape[j])
    for p in buffers:
        t = values[p.index]
        # A buffer declared without strides is row-major: its strides are products of its declared sizes.
        strides = p.strides or [math.prod(p.shape[j + 1:]) for j in range(len(p.shape))]
        for j, declared in enumerate(strides):
            check_or_bind(p, "stride", j, declared, t.stride(j), size_one_passes=True)
    return symbols


def _router(original):
    def __call__(self, *args, **kwargs):
        mode: Optional[LaunchMode] = current_mode()
        if mode is None:
            return original(self, *args, **kwargs)
        if kwargs.keys() - {"stream"}:
            raise CallError(f"{_the_op(mode)}: TileLang kernel call with keywords {sorted(kwargs)}: torch_tile op "
                            "bodies call TileLang kernels with positional arguments (the op launches on the "
                            "current torch stream)")
        sig = signature(self)
        values, symbols = bind_call(sig, args, mode)
        values = tuple(values)
        if mode.records:  # each device kernel a launch of its own
            for i in range(len(lowering(self).kernels)):
                mode.launch(DeviceKernelLaunch(self, i, symbols), None, values, {})
        else:
            mode.launch(self, None, values, {})
        outputs = [values[i] for i in sig.out_idx]
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs
    return __call__


def _constant(value: Any) -> Any:
    """A value passed to a ``@tilelang.jit`` factory as TileLang compiles it: a constant, so a size (a trace's
    stand-in, a fake tensor's SymInt) is specialised (guarded on its value) and each value gets its kernel, as
    TileLang compiles one per distinct argument tuple."""
    if isinstance(value, SymbolicInt):
        return bool(value.specialize()) if value.is_bool else value.specialize()
    if isinstance(value, SymbolicFloat):
        return value.specialize()
    for symbolic, concrete in ((torch.SymInt, int), (torch.SymFloat, float), (torch.SymBool, bool)):
        if isinstance(value, symbolic):  # specialised by its ShapeEnv
            return concrete(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_constant(v) for v in value)
    return value


def _factory_router(original):
    """``factory(M, N, K, ...)`` of a ``@tilelang.jit`` factory in a body: TileLang's own call (its kernel cache, its
    compile on a miss) on the arguments made constants; the ``JITKernel`` it returns is then called and recorded."""
    def __call__(self, *args, **kwargs):
        if current_mode() is None:
            return original(self, *args, **kwargs)
        return original(self, *_constant(args), **{k: _constant(v) for k, v in kwargs.items()})
    return __call__


add_routing(attribute_routing("tilelang.jit.kernel", lambda module: module.JITKernel, "__call__", _router))
add_routing(attribute_routing("tilelang.jit", lambda module: module.JITImpl, "__call__", _factory_router))
