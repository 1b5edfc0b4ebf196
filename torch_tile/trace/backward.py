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

    (Tensor saved_0, ..., int[] ints, float float_0, ..., Tensor? grad_0, ..., int needs_input_grad)
        -> (Tensor, ...)   # one gradient per forward argument; None is an undefined tensor

A ``setup_context`` that cannot be traced (it reads ``ctx.needs_input_grad``,
marks tensors dirty, keeps objects a plan cannot hold) gives a spec that says
why, and those calls keep the ``autograd.Function`` path; a backward that cannot
be traced runs eagerly (both warned once, from C++).
"""

from __future__ import annotations

import dataclasses
import enum
import types
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

import torch
from torch.utils import _pytree as pytree

from .. import _plan
from .._errors import TraceError
from .expr import SymbolicInt, encode_int
from .stand_ins import SymbolicFloat, TensorProxy
from .state import current_tracer

# Attribute values a plan keeps as they are (the gradient op's plans are traced with them): the same for every call
# the plan serves (an enum member, a function or class a library keeps for its backward).
_CONSTANTS = (type(None), bool, str, torch.dtype, torch.device, enum.Enum, type, types.FunctionType,
              types.BuiltinFunctionType)


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


def gradient_schema(layout) -> str:
    """The schema of the gradient op of a layout (a ``SavedLayout``, or a tape's): what the forward kept, one
    gradient per output, the mask of the arguments needing one; one gradient per argument."""
    params = ([f"Tensor saved_{k}" for k in range(layout.num_tensors)] + ["int[] ints"] +
              [f"float float_{k}" for k in range(layout.num_floats)] +
              [f"Tensor? grad_{k}" for k in range(layout.num_outputs)] + ["int needs_input_grad"])
    returns = ", ".join(["Tensor"] * layout.num_args)
    return f"({', '.join(params)}) -> " + (returns if layout.num_args == 1 else f"({returns})")


class _Recording:
    """What a ctx was given: ``outputs`` are the forward's (known after a Function's forward returns)."""

    def __init__(self, outputs: Optional[list] = None):
        self.outputs = outputs
        self.saved: tuple = ()
        self.attrs: dict[str, Any] = {}
        self.marked_non_differentiable: list = []
        self.dirty: list = []
        self.materialize = True

    def non_differentiable(self) -> set[int]:
        """The outputs marked non-differentiable, by position (NotNative for a marked tensor that is none)."""
        marked = set()
        for t in self.marked_non_differentiable:
            index = next((i for i, o in enumerate(self.outputs) if o is t), None)
            if index is None:
                raise NotNative("mark_non_differentiable got a tensor that is not an output")
            marked.add(index)
        return marked


class RecordingContext:
    """The ``ctx`` a traced ``setup_context`` (or a Function's forward) receives. ``needs_input_grad``: what
    ``ctx.needs_input_grad`` answers (None: reading it is not native)."""

    def __init__(self, outputs: Optional[list] = None, needs_input_grad: Optional[Callable[[], tuple]] = None,
                 tensor_type: type = TensorProxy):
        object.__setattr__(self, "_recording", _Recording(outputs))
        object.__setattr__(self, "_needs_input_grad", needs_input_grad)
        object.__setattr__(self, "_tensor_type", tensor_type)  # a trace's stand-ins, or a real run's tensors

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, self._tensor_type):
                raise NotNative(f"save_for_backward got a {type(t).__name__}, not a tensor of the op")
        self._recording.saved = tensors

    def save_for_forward(self, *tensors) -> None:  # forward-mode AD only, which tile ops do not do
        pass

    @property
    def saved_tensors(self) -> tuple:
        return self._recording.saved

    def mark_non_differentiable(self, *tensors) -> None:
        self._recording.marked_non_differentiable.extend(tensors)
        if self._recording.outputs is not None:  # checked now, where the outputs are known
            self._recording.non_differentiable()

    def set_materialize_grads(self, value: bool) -> None:
        self._recording.materialize = bool(value)

    def mark_dirty(self, *tensors) -> None:
        if self._needs_input_grad is None:
            raise NotNative("setup_context marks tensors dirty")
        self._recording.dirty.extend(tensors)

    @property
    def needs_input_grad(self):
        if self._needs_input_grad is None:
            raise NotNative("setup_context reads ctx.needs_input_grad, which differs from call to call")
        return self._needs_input_grad()

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


class _ObjectFields(NamedTuple):
    """An object kept on ctx (a library's config dataclass, Triton's ``Config`` an autotuner chose), as a tree: its
    fields are values of the call (a bool argument, a size) or constants, flattened like any attribute, and the
    object is rebuilt from them."""
    cls: type
    names: tuple
    values: tuple


def _plain_object(value) -> bool:
    """An instance whose state is its ``__dict__`` and nothing else (no ``__new__``, ``__slots__``, pickling or
    call of its own): a copy rebuilt from its fields is the same value. A plan keeps what it was traced with (an
    autotuned config is chosen per plan), so such an object is the same for every call the plan serves."""
    cls = type(value)
    return isinstance(getattr(value, "__dict__", None), dict) and cls.__module__ != "builtins" and \
        cls.__new__ is object.__new__ and cls.__reduce_ex__ is object.__reduce_ex__ and \
        getattr(cls, "__getstate__", object.__getstate__) is object.__getstate__ and \
        "__slots__" not in vars(cls) and not callable(value) and \
        not isinstance(value, (*_CONSTANTS, torch.Tensor, TensorProxy, SymbolicInt, SymbolicFloat))


def _field_names(value) -> Optional[tuple]:
    """The fields ``value`` is rebuilt from, if it is a dataclass instance or a plain object (else None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(f.name for f in dataclasses.fields(value))
    return tuple(vars(value)) if _plain_object(value) else None


def _as_tree(value, depth: int = 0):
    """``value`` with each dataclass instance or plain object in it (a few levels down) an ``_ObjectFields``."""
    if depth > 3:
        return value
    if type(value) in (tuple, list):
        return type(value)(_as_tree(v, depth + 1) for v in value)
    if type(value) is dict:
        return {k: _as_tree(v, depth + 1) for k, v in value.items()}
    names = _field_names(value)
    if names is None:
        return value
    return _ObjectFields(type(value), names, tuple(_as_tree(getattr(value, n), depth + 1) for n in names))


def _from_tree(value):
    """``_as_tree``'s inverse: each ``_ObjectFields`` an instance again (its fields set as a copy sets them)."""
    if isinstance(value, _ObjectFields):
        instance = value.cls.__new__(value.cls)
        for name, v in zip(value.names, value.values):
            object.__setattr__(instance, name, _from_tree(v))
        return instance
    if type(value) in (tuple, list):
        return type(value)(_from_tree(v) for v in value)
    if type(value) is dict:
        return {k: _from_tree(v) for k, v in value.items()}
    return value


class ValueSaver:
    """What forwards keep for a gradient op, flattened: tensors (slots), ints (plan expressions over the
    arguments) and floats (a float argument, or a constant), in the order kept; the fields of the plan's
    ``BackwardSpec`` that say where each comes from. With no ``sink`` (a real run of the body), the values
    themselves: ``kept`` holds the tensors in either case."""

    def __init__(self, sink):
        self.sink = sink
        self.kept: list = []
        self.slots: list[int] = []
        self.ints: list = []
        self.float_args: list[int] = []
        self.float_values: list[float] = []

    def tensor(self, t) -> int:
        if self.sink is not None and self.sink.on_host(t):
            raise NotNative(f"the forward keeps '{t._name}', a tensor it made on the host, for the backward")
        self.kept.append(t)
        self.slots.append(t._slot if self.sink is not None else -1)
        return len(self.slots) - 1

    def int(self, value) -> int:
        self.ints.append(_plan.expr(encode_int(value, self.sink)) if self.sink is not None else value)
        return len(self.ints) - 1

    def leaf(self, name: str, value) -> tuple:
        """One value kept on ctx: ("tensor" | "int" | "bool" | "float", index) or ("const", value)."""
        if isinstance(value, TensorProxy) or (self.sink is None and isinstance(value, torch.Tensor)):
            return ("tensor", self.tensor(value))
        if isinstance(value, SymbolicInt) or (isinstance(value, int) and not isinstance(value, bool)):
            return ("bool" if getattr(value, "is_bool", False) else "int", self.int(value))
        if isinstance(value, (SymbolicFloat, float)):
            self.float_args.append(value.arg if isinstance(value, SymbolicFloat) else -1)
            self.float_values.append(0.0 if isinstance(value, SymbolicFloat) else value)
            return ("float", len(self.float_args) - 1)
        if isinstance(value, _CONSTANTS):
            return ("const", value)
        raise NotNative(f"ctx.{name} holds a {type(value).__name__}, which a plan cannot keep")

    def context(self, recording: _Recording) -> tuple[tuple, tuple]:
        """A recording's saved tensors (tensor indices, None kept) and attributes (name, treespec, leaves)."""
        saved = tuple(None if t is None else self.tensor(t) for t in recording.saved)
        attrs = []
        for name, value in recording.attrs.items():
            leaves, spec = pytree.tree_flatten(_as_tree(value))
            attrs.append((name, spec, tuple(self.leaf(name, v) for v in leaves)))
        return saved, tuple(attrs)

    def spec_fields(self) -> dict:
        return dict(saved=self.slots, ints=self.ints, float_args=self.float_args, float_values=self.float_values)


def backward_spec(recording: _Recording, num_args: int, sink) -> tuple[SavedLayout, dict]:
    """The layout of what ``setup_context`` kept, and the fields of the plan's
    ``BackwardSpec`` saying where each value comes from (the caller adds ``gradient_op``)."""
    saver = ValueSaver(sink)
    saved, attrs = saver.context(recording)
    non_differentiable = recording.non_differentiable()
    # The node passes no gradient for a non-differentiable output: the body makes its zeros, if it reads them.
    zero_grads = []
    if recording.materialize:
        for k in sorted(non_differentiable):
            out = recording.outputs[k]
            zero_grads.append((k, len(saver.ints), out.dim(), out.dtype))
            for s in out.shape:
                saver.int(s)
    layout = SavedLayout(saved, attrs, tuple(zero_grads), len(saver.slots), len(saver.ints),
                         len(saver.float_args), len(recording.outputs), num_args)
    spec = dict(saver.spec_fields(),
                differentiable=[0 if i in non_differentiable else 1 for i in range(len(recording.outputs))],
                materialize_grads=recording.materialize)
    return layout, spec


class NeedsInputGrad:
    """``ctx.needs_input_grad`` from the mask of the op's arguments that need a gradient (the node passes it):
    item i is whether any of the arguments in ``depends[i]`` (a bit per argument) needs one; in a trace only the
    items read become guards."""

    def __init__(self, mask, depends: tuple):
        self._mask, self._depends = mask, depends

    def __len__(self) -> int:
        return len(self._depends)

    def __getitem__(self, i: int) -> bool:
        n = len(self._depends)
        if not -n <= i < n:
            raise IndexError("needs_input_grad index out of range")
        bits = self._depends[i % n]
        return any(bool((self._mask >> j) & 1) for j in range(bits.bit_length()) if bits >> j & 1)

    def __iter__(self):
        return (self[i] for i in range(len(self._depends)))


class ReplayContext:
    """The ``ctx`` a backward receives in a gradient op's body: the saved tensors and attributes a forward kept
    (``saved`` and ``attrs`` as ``ValueSaver.context`` laid them out) over the gradient op's arguments."""

    def __init__(self, saved: tuple, attrs: tuple, tensors, ints, floats, needs_input_grad: NeedsInputGrad):
        values = {"tensor": tensors, "int": ints, "float": floats,
                  "bool": [v if isinstance(v, SymbolicInt) else bool(v) for v in ints]}

        self.saved_tensors = tuple(None if k is None else tensors[k] for k in saved)
        self.needs_input_grad = needs_input_grad
        for name, spec, leaves in attrs:
            setattr(self, name, _from_tree(pytree.tree_unflatten(
                [value if kind == "const" else values[kind][value] for kind, value in leaves], spec)))


def gradient_body(qualname: str, layout: SavedLayout, backward: Callable, tensor_args: list[bool]) -> Callable:
    """The body of a gradient op: the registered backward on a rebuilt context."""
    t, f, g = layout.num_tensors, layout.num_floats, layout.num_outputs

    def body(*args):
        ints = args[t]
        ctx = ReplayContext(layout.saved, layout.attrs, args[:t], ints, args[t + 1:t + 1 + f],
                            NeedsInputGrad(args[-1], tuple(1 << k for k in range(layout.num_args))))
        grads = list(args[t + 1 + f:t + 1 + f + g])
        for k, first, rank, dtype in layout.zero_grads:  # autograd.Function's zeros, made only where read
            if grads[k] is None:
                grads[k] = zeros_for(list(ints[first:first + rank]), dtype, next(g for g in grads if g is not None))
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

    return body


def zeros_for(size: list, dtype: torch.dtype, like):
    """Zeros for a gradient no one passed (autograd.Function's materialized ones), on ``like``'s device: deferred
    in a trace (made only if the backward uses them)."""
    tracer = current_tracer()
    if tracer is not None:
        return tracer.deferred_zeros(size, dtype)
    return torch.zeros(size, dtype=dtype, device=like.device)


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
