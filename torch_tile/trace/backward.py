"""Native autograd: an op's ``setup_context`` traced into its plan, and its
backward run as a *gradient op*.

When a differentiable op is traced, its ``setup_context`` runs on the stand-ins
with a :class:`RecordingContext`. What it keeps (``save_for_backward``,
attributes holding tensors, sizes, float arguments or constants,
``mark_non_differentiable``, ``set_materialize_grads``) becomes the plan's
``BackwardSpec``: slots, expressions and float arguments that C++ reads after the
forward ran, into a C++ autograd node (``csrc/torch/native_backward.cpp``).

The node's backward calls the gradient op, a tile op whose body rebuilds the
context (:class:`ReplayContext`) and calls the registered backward: it is traced
into plans like any body (the tile ops it calls become ATen steps), so a training
step runs no Python after its first call. Its schema is fixed by the layout of
what the forward keeps (a :class:`SavedLayout`)::

    (Tensor saved_0, ..., int int_0, ..., float float_0, ..., Tensor? grad_0, ..., int needs_input_grad)
        -> (Tensor, ...)   # one gradient per forward argument; None is an undefined tensor

A ``setup_context`` that cannot be traced (it reads ``ctx.needs_input_grad``,
marks tensors dirty, keeps objects a plan cannot hold) gives a spec that says
why, and those calls keep the ``autograd.Function`` path; a backward that cannot
be traced runs eagerly (both warned once, from C++).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from torch.utils import _pytree as pytree

from .. import _plan
from .._errors import TraceError
from .expr import SymbolicInt, encode_int
from .stand_ins import SymbolicFloat, TensorProxy
from .state import current_tracer

# Attribute values a plan keeps as they are (the gradient op's plans are traced with them).
_CONSTANTS = (type(None), bool, str, torch.dtype, torch.device)


class NotNative(Exception):
    """``setup_context`` did something a plan cannot hold; the message says what."""


@dataclass(frozen=True)
class SavedLayout:
    """How a forward's kept values are laid out: the gradient op's schema and
    how its body rebuilds the context. ``saved``: per ``save_for_backward``
    entry, a tensor index or None; ``attrs``: (name, treespec, leaves), a leaf
    being ("tensor" | "int" | "bool" | "float", index) or ("const", value)."""
    saved: tuple
    attrs: tuple
    zero_grads: tuple  # per non-differentiable output: (output, first of its sizes in the ints, rank, dtype)
    num_tensors: int
    num_ints: int
    num_floats: int
    num_outputs: int
    num_args: int

    def schema(self) -> str:
        params = ([f"Tensor saved_{k}" for k in range(self.num_tensors)] +
                  [f"int int_{k}" for k in range(self.num_ints)] +
                  [f"float float_{k}" for k in range(self.num_floats)] +
                  [f"Tensor? grad_{k}" for k in range(self.num_outputs)] + ["int needs_input_grad"])
        returns = ", ".join(["Tensor"] * self.num_args)
        return f"({', '.join(params)}) -> " + (returns if self.num_args == 1 else f"({returns})")


class _Recording:
    def __init__(self, outputs: list):
        self.outputs = outputs
        self.saved: tuple = ()
        self.attrs: dict[str, Any] = {}
        self.non_differentiable: set[int] = set()
        self.materialize = True


class RecordingContext:
    """The ``ctx`` a traced ``setup_context`` receives."""

    def __init__(self, outputs: list):
        object.__setattr__(self, "_recording", _Recording(outputs))

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, TensorProxy):
                raise NotNative(f"save_for_backward got a {type(t).__name__}, not a tensor of the op")
        self._recording.saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        return self._recording.saved

    def mark_non_differentiable(self, *tensors) -> None:
        outputs = self._recording.outputs
        for t in tensors:
            index = next((i for i, o in enumerate(outputs) if o is t), None)
            if index is None:
                raise NotNative("mark_non_differentiable got a tensor that is not an output")
            self._recording.non_differentiable.add(index)

    def set_materialize_grads(self, value: bool) -> None:
        self._recording.materialize = bool(value)

    def mark_dirty(self, *tensors) -> None:
        raise NotNative("setup_context marks tensors dirty")

    @property
    def needs_input_grad(self):
        raise NotNative("setup_context reads ctx.needs_input_grad, which differs from call to call")

    def __setattr__(self, name: str, value) -> None:
        self._recording.attrs[name] = value

    def __getattr__(self, name: str):
        attrs = object.__getattribute__(self, "_recording").attrs
        if name in attrs:
            return attrs[name]
        raise AttributeError(f"ctx has no attribute {name!r}")


def record_setup(setup_context: Callable, inputs: tuple, output, outputs: list) -> _Recording:
    """Runs ``setup_context`` on the stand-ins (inside the trace)."""
    ctx = RecordingContext(outputs)
    setup_context(ctx, inputs, output)
    return ctx._recording


def backward_spec(recording: _Recording, num_args: int, sink) -> tuple[SavedLayout, dict]:
    """The layout of what ``setup_context`` kept, and the fields of the plan's
    ``BackwardSpec`` saying where each value comes from (the caller adds ``gradient_op``)."""
    slots: list[int] = []
    ints: list = []
    float_args: list[int] = []
    float_values: list[float] = []

    def tensor(t: TensorProxy) -> tuple:
        slots.append(t._slot)
        return ("tensor", len(slots) - 1)

    def leaf(name: str, value) -> tuple:
        if isinstance(value, TensorProxy):
            return tensor(value)
        if isinstance(value, SymbolicInt) or (isinstance(value, int) and not isinstance(value, bool)):
            ints.append(_plan.expr(encode_int(value, sink)))
            return ("bool" if getattr(value, "is_bool", False) else "int", len(ints) - 1)
        if isinstance(value, (SymbolicFloat, float)):
            float_args.append(value.arg if isinstance(value, SymbolicFloat) else -1)
            float_values.append(0.0 if isinstance(value, SymbolicFloat) else value)
            return ("float", len(float_args) - 1)
        if isinstance(value, _CONSTANTS):
            return ("const", value)
        raise NotNative(f"ctx.{name} holds a {type(value).__name__}, which a plan cannot keep")

    saved = tuple(None if t is None else tensor(t)[1] for t in recording.saved)
    attrs = []
    for name, value in recording.attrs.items():
        leaves, spec = pytree.tree_flatten(value)
        attrs.append((name, spec, tuple(leaf(name, v) for v in leaves)))
    # The node passes no gradient for a non-differentiable output: the body makes its zeros, if it reads them.
    zero_grads = []
    if recording.materialize:
        for k in sorted(recording.non_differentiable):
            out = recording.outputs[k]
            zero_grads.append((k, len(ints), out.dim(), out.dtype))
            ints.extend(_plan.expr(encode_int(s, sink)) for s in out.shape)
    layout = SavedLayout(saved, tuple(attrs), tuple(zero_grads), len(slots), len(ints), len(float_args),
                         len(recording.outputs), num_args)
    spec = dict(saved=slots, ints=ints, float_args=float_args, float_values=float_values,
                differentiable=[0 if i in recording.non_differentiable else 1 for i in range(len(recording.outputs))],
                materialize_grads=recording.materialize)
    return layout, spec


class _NeedsInputGrad:
    """``ctx.needs_input_grad``: bit i of the mask the node passes; in a trace
    only the items read become guards."""

    def __init__(self, mask, n: int):
        self._mask, self._n = mask, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> bool:
        if not -self._n <= i < self._n:
            raise IndexError("needs_input_grad index out of range")
        return bool((self._mask >> (i % self._n)) & 1)

    def __iter__(self):
        return (self[i] for i in range(self._n))


class ReplayContext:
    """The ``ctx`` a backward receives in a gradient op's body."""

    def __init__(self, layout: SavedLayout, tensors, ints, floats, mask):
        values = {"tensor": tensors, "int": ints, "float": floats,
                  "bool": [v if isinstance(v, SymbolicInt) else bool(v) for v in ints]}
        self.saved_tensors = tuple(None if k is None else tensors[k] for k in layout.saved)
        self.needs_input_grad = _NeedsInputGrad(mask, layout.num_args)
        for name, spec, leaves in layout.attrs:
            setattr(self, name, pytree.tree_unflatten(
                [value if kind == "const" else values[kind][value] for kind, value in leaves], spec))


def gradient_body(qualname: str, layout: SavedLayout, backward: Callable, tensor_args: list[bool]) -> Callable:
    """The body of a gradient op: the registered backward on a rebuilt context."""
    t, i, f, g = layout.num_tensors, layout.num_ints, layout.num_floats, layout.num_outputs

    def body(*args):
        ints = args[t:t + i]
        ctx = ReplayContext(layout, args[:t], ints, args[t + i:t + i + f], args[-1])
        grads = list(args[t + i + f:t + i + f + g])
        for k, first, rank, dtype in layout.zero_grads:  # autograd.Function's zeros, made only where read
            if grads[k] is None:
                grads[k] = _zeros(list(ints[first:first + rank]), dtype, grads)
        result = backward(ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != layout.num_args:
            raise TraceError(f"{qualname}: the backward returned {len(result)} gradient(s), expected "
                             f"{layout.num_args} (one per input; None for non-tensor inputs)")
        for k, grad in enumerate(result):
            if grad is not None and not tensor_args[k]:
                raise TraceError(f"{qualname}: the backward returned a gradient for input {k}, which is not a "
                                 "tensor: return None there")
        return result

    body.__wrapped__ = backward  # its lines name the gradient op's steps and errors (TileOp.sources)
    return body


def _zeros(size: list, dtype: torch.dtype, grads: list):
    """Zeros for a non-differentiable output's gradient: deferred in a trace, else on the gradients' device."""
    tracer = current_tracer()
    if tracer is not None:
        return tracer.deferred_zeros(size, dtype)
    device = next(g.device for g in grads if isinstance(g, torch.Tensor))
    return torch.zeros(size, dtype=dtype, device=device)


def native_spec(op, tracer, result, outputs: list) -> Optional[tuple[Optional[SavedLayout], dict]]:
    """Traces ``op``'s setup_context for a forward plan: (layout, spec fields),
    or (None, {"reason": ...}) when its calls must differentiate in Python (what
    the setup trace recorded is then dropped from the plan). None when the op
    has no backward."""
    if op.backward_fn is None:
        return None
    checkpoint = tracer.checkpoint()
    try:
        recording = _Recording(outputs) if op.setup_context_fn is None else \
            record_setup(op.setup_context_fn, tuple(tracer.stand_ins), result, outputs)
        return backward_spec(recording, len(op.arg_names), tracer)
    except (NotNative, TraceError) as e:
        tracer.rollback(checkpoint)
        code = (op.setup_context_fn or op.backward_fn).__code__
        return None, {"reason": f"{code.co_filename}:{code.co_firstlineno}: {type(e).__name__}: {e}"}
