"""Training through the ``torch.autograd.Function``\\ s a body applies: their forwards traced into the op's plan,
their backwards replayed, in reverse, by a gradient op.

Libraries ship kernels as autograd.Functions: ``forward(ctx, ...)`` launches kernels and keeps state on ``ctx``,
``backward(ctx, *grads)`` launches more. A body that applies one at its top level (not from another Function's
forward, which eager runs without autograd) records a *tape* while it is traced:

* a **Function node** per application that takes a tensor needing a gradient: its forward ran on a recording
  ``ctx`` (``save_for_backward``, attributes, ``mark_non_differentiable``, ``set_materialize_grads``), which a
  ``ValueSaver`` flattens into what the plan keeps (tensors by slot, ints as expressions, floats);
* a **view node** per view of such a tensor (``x.view(-1, d)`` before a Function, ``y.view(shape)`` after one);
* a **conversion node** per copy of one (``.contiguous()``, ``.float()``).

Which tensors need a gradient follows eager autograd: the op's floating tensor arguments, and what Function
nodes, views and conversions make of them; not what kernels launched outside a Function write (autograd does
not see those either). Any other torch operation that makes such a tensor (autograd would record it and its
derivative) leaves the op's gradients to the Python path (the body runs under autograd for those calls), as do a
forward that reads ``ctx.needs_input_grad`` or ``requires_grad`` (the plan also serves calls needing no
gradient), marks an input dirty or returns one.

The tape becomes the plan's ``BackwardSpec`` (a ``TapeLayout``). The gradient op's body
(``tape_gradient_body``) gets what the forwards kept, the op outputs' gradients and the mask of the arguments
needing one, and runs the nodes backwards as autograd's engine would: each Function's own ``backward`` (or
``vjp``) on a rebuilt ``ctx`` (``needs_input_grad`` from the mask; zeros for outputs it got no gradient for,
unless it turned materialization off; a node no gradient reaches, or none of whose inputs needs one, does not
run), the gradients it returns checked and fitted to its inputs as the engine fits them (summed to their sizes,
converted to their dtypes), gradients of a tensor used twice summed. One C++ node per call: a training step runs
no Python once traced.

The same tape, recorded by a real run of the body (``EagerTape``), gives the Python path (CPU, torch.compile,
torch.func) the tensors the forwards kept, so that it too runs the gradient op.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

import torch
from torch.autograd.function import BackwardCFunction, _is_setup_context_defined

from .backward import NeedsInputGrad, NotNative, RecordingContext, ReplayContext, ValueSaver, zeros_for
from .expr import Op, substitute
from .stand_ins import TensorProxy, is_contiguous
from .state import body_location, current_tracer

_Function = torch.autograd.Function

# ATen operators that copy a tensor, whose gradient is the gradient converted back (to the source's dtype).
_CONVERSIONS = frozenset({"aten::clone", "aten::_to_copy", "aten::to", "aten::contiguous"})
# View operators whose result needs no gradient (autograd does not record them).
_NOT_DIFFERENTIABLE_VIEWS = frozenset({"aten::detach"})
# Operators whose results take only their arguments' metadata: eager tracks no gradient through them.
_NO_GRADIENT = frozenset({f"aten::{name}" for name in (
    "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like", "new_empty",
    "new_empty_strided", "new_zeros", "new_ones", "new_full")})


def differentiable(dtype: torch.dtype) -> bool:
    """Whether autograd differentiates tensors of ``dtype``."""
    return dtype.is_floating_point or dtype.is_complex


# -- the layout a plan keeps ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FunctionNode:
    """One ``Function.apply``. ``inputs``: per argument of ``apply``, the tape value (slot) it is, or None;
    ``depends``: per argument, the op arguments it depends on (a bit each); ``input_metas``: per argument with a
    value, (first int, rank, dtype) of its sizes among the kept ints; ``outputs``: per forward output, its tape
    value or None; ``zeros``: per forward output that is a tensor, (first int, rank, dtype) of its sizes, the
    zeros a materialized gradient is made of; ``saved`` / ``attrs``: the ctx (``ValueSaver.context``)."""
    function: type
    inputs: tuple
    depends: tuple
    input_metas: tuple
    outputs: tuple
    zeros: tuple
    saved: tuple
    attrs: tuple
    materialize: bool


@dataclass(frozen=True)
class ViewNode:
    """A view of a tensor needing a gradient. ``base_shape``: (first int, rank) of the base's sizes;
    ``geometry``: None for a reshape of a contiguous base into a contiguous view, else (first int, rank): the
    view's sizes, strides and offset in the base's elements (the base is contiguous)."""
    base: int
    view: int
    base_shape: tuple
    geometry: Optional[tuple]
    dtype: torch.dtype


@dataclass(frozen=True)
class ConversionNode:
    """A copy of a tensor needing a gradient (``.contiguous()``, ``.to(dtype)``): ``dtype`` is the source's."""
    source: int
    result: int
    dtype: torch.dtype


@dataclass(frozen=True)
class TapeLayout:
    """What a plan keeps for the gradient op of a body that applies Functions, and how the gradient op's body
    uses it. ``outputs``: per op output, its tape value (None: not differentiable); ``arguments``: per op argument,
    its tape value (its slot) or None; ``sources``: per kept tensor, where the Python path takes it from:
    ("arg", i), ("output", k) or ("extra", j) (the j-th tensor the forward op returns after the outputs)."""
    nodes: tuple
    outputs: tuple
    arguments: tuple
    sources: tuple
    num_tensors: int
    num_ints: int
    num_floats: int
    num_outputs: int
    num_args: int

    @property
    def num_extras(self) -> int:
        return sum(1 for kind, _ in self.sources if kind == "extra")


Node = Union[FunctionNode, ViewNode, ConversionNode]


# -- recording, in a trace --------------------------------------------------------------------------------------

_local = threading.local()


def _depth() -> int:
    """How many recorded Functions' forwards this thread is inside (their own Functions run inline)."""
    return getattr(_local, "depth", 0)



@dataclass
class _Applied:
    """A Function node as recorded (its values still stand-ins)."""
    function: type
    args: tuple
    inputs: tuple
    depends: tuple
    outputs: list
    recording: Any


@dataclass
class _Viewed:
    base: TensorProxy
    view: TensorProxy
    operator: str


@dataclass
class _Converted:
    source: int
    result: int
    dtype: torch.dtype


class FunctionTape:
    """The Functions, views and conversions on the gradient's path of one trace (the tracer owns one)."""

    def __init__(self, tracer, arguments: dict, requires_grad: Callable[[int], Any]):
        """``arguments``: the op's tensor arguments by slot (their stand-ins); ``requires_grad(slot)``: whether one
        requires a gradient in the traced call, a bool over the call (a plan of a body that applies a Function holds
        for one pattern: which Functions autograd records depends on it, as in eager)."""
        self.tracer = tracer
        self._floating = [slot for slot, proxy in arguments.items() if slot < 63 and differentiable(proxy.dtype)]
        self._requires_grad_of = requires_grad
        self._requires_grad = {slot: bool(requires_grad(slot).value) for slot in self._floating}
        # Tensors needing a gradient (by slot): the op arguments (a bit each) they depend on.
        self.depends: dict[int, int] = {slot: 1 << slot for slot in self._floating if self._requires_grad[slot]}
        self.dtypes: dict[int, torch.dtype] = {slot: arguments[slot].dtype for slot in self.depends}  # of those
        self.arguments = tuple(sorted(self.depends))
        self.untraceable: dict[int, str] = {}  # slot -> why its gradient is not a plan's
        self.recorded: list = []
        # A view's root: the tensor its chain of views starts from (a view of a view is one of the root's memory).
        self._view_roots: dict[int, TensorProxy] = {}
        self.not_native: Optional[str] = None
        self.any_applied = False  # a Function applied at the body's top level (a node or not)

    @property
    def applied(self) -> bool:
        return any(isinstance(r, _Applied) for r in self.recorded)

    def _refuse(self, why: str) -> None:
        if self.not_native is None:
            self.not_native = f"{body_location(*self.tracer.op.sources)}: {why}"

    def apply(self, cls: type, args: tuple):
        """``cls.apply(*args)`` in the body: a node if it takes a tensor needing a gradient, else (or from
        another Function's forward) the forward inline, as eager runs it."""
        if _depth() > 0:
            return run_inline(cls, args)
        self.any_applied = True
        inputs = tuple(a._slot if isinstance(a, TensorProxy) and a._slot in self.depends else None for a in args)
        if all(i is None for i in inputs):
            return run_inline(cls, args)
        for slot in inputs:
            if slot in self.untraceable:
                self._refuse(self.untraceable[slot])
        out, recording = _recorded_forward(cls, args, TensorProxy, lambda: tuple(
            self.read_requires_grad(a) if isinstance(a, TensorProxy) else False for a in args))
        outputs = recording.outputs
        try:
            non_differentiable = recording.non_differentiable()
        except NotNative as e:
            self._refuse(f"{cls.__qualname__}: {e}")
            non_differentiable = set()
        if recording.dirty:
            self._refuse(f"{cls.__qualname__}'s forward marks an input dirty (writes it in place)")
        depends = 0
        for slot in inputs:
            depends |= self.depends.get(slot, 0) if slot is not None else 0
        for k, o in enumerate(outputs):
            if not isinstance(o, TensorProxy):
                continue
            if o._slot < self.tracer.num_inputs or self.tracer.root_slot(o._slot) < self.tracer.num_inputs or \
                    o._slot in inputs:
                self._refuse(f"{cls.__qualname__}'s forward returns an input (or a view of one)")
            if k not in non_differentiable and differentiable(o.dtype):
                self.depends[o._slot], self.dtypes[o._slot] = depends, o.dtype
        self.recorded.append(_Applied(cls, args, inputs, tuple(self.depends.get(s, 0) if s is not None else 0
                                                                for s in inputs), outputs, recording))
        return out

    def read_requires_grad(self, proxy: TensorProxy):
        """``x.requires_grad`` (or a forward's ``ctx.needs_input_grad``): of an op argument, the call's (a bool over
        ``REQUIRES_GRAD``: a guard where the body decides on it); of a tensor the body made, False where it needs
        no gradient; else it depends on autograd's mode, which a plan does not see: such calls take the Python
        path."""
        slot = proxy._slot
        if slot in self._requires_grad:
            return self._requires_grad_of(slot)
        if slot in self.depends:
            self._refuse(f"`{proxy._name}.requires_grad` is read of a tensor the body computed, which depends on "
                         "autograd's mode")
        return False

    def view(self, base: TensorProxy, view: TensorProxy, operator: Optional[str]) -> None:
        """``view`` was made of ``base`` (by ``operator``, None for views the tracer makes itself). Its gradient is
        decided with the layout (``_view_node``): a body that applies no Function gets no guard from it."""
        if _depth() > 0 or base._slot not in self.depends:
            return
        if operator in _NOT_DIFFERENTIABLE_VIEWS or not differentiable(view.dtype):
            return
        if base._slot in self.untraceable:  # as untraceable as its base, and needing a gradient as it does
            self.untraceable[view._slot] = self.untraceable[base._slot]
            self.depends[view._slot] = self.depends[base._slot]
            return
        self.depends[view._slot], self.dtypes[view._slot] = self.depends[base._slot], view.dtype
        # Its gradient goes to the root directly: a transposed base's slice is a view of the contiguous root.
        root = self._view_roots.get(base._slot, base)
        self._view_roots[view._slot] = root
        self.recorded.append(_Viewed(root, view, operator or "a view"))

    def aten(self, name: str, arguments: list, results: list, written: list) -> None:
        """An ATen step: its tensor arguments' and results' slots, and the slots it writes."""
        if _depth() > 0:
            return
        involved = [s for s in arguments if s in self.depends]
        if not involved or name in _NO_GRADIENT:
            return
        site = f"`{name}` at {body_location(*self.tracer.op.sources)}"
        for slot in written:
            self.untraceable[slot] = f"{site} writes a tensor computed from one needing a gradient"
            self.depends[slot] = self.depends.get(slot, 0)
        tainted = next((self.untraceable[s] for s in involved if s in self.untraceable), None)
        depends = 0
        for s in involved:
            depends |= self.depends[s]
        for slot, dtype in results:
            if not differentiable(dtype):
                continue
            self.depends[slot], self.dtypes[slot] = depends, dtype
            if tainted is not None:
                self.untraceable[slot] = tainted
            elif name in _CONVERSIONS and len(involved) == 1 and len(results) == 1:
                self.recorded.append(_Converted(involved[0], slot, self.dtypes[involved[0]]))
            else:
                self.untraceable[slot] = f"{site} computes a tensor needing a gradient; only " \
                                         "autograd.Functions, views and copies are differentiated natively"

    def _view_node(self, r: _Viewed, saver: ValueSaver, shape: Callable) -> ViewNode:
        """A view's gradient: the view's gradient reshaped to the base (a contiguous base, a contiguous view of all
        its elements), else scattered into zeros of the base's sizes (a contiguous base, a view whose elements do
        not overlap: a sum would be needed otherwise). The comparisons are guards of the plan."""
        base, view = r.base, r.view
        why = None
        if view.dtype != base.dtype:
            why = "views a tensor needing a gradient as another dtype"
        elif not is_contiguous(base.size(), base.stride()):
            why = "views a tensor needing a gradient that is not contiguous"
        elif not _non_overlapping(view.size(), view.stride()):
            why = "makes a view whose elements overlap (its gradient would be a sum)"
        if why is not None:
            raise NotNative(f"`{r.operator}` {why}")
        base_shape = shape(base)[:2]
        geometry = None
        if not (is_contiguous(view.size(), view.stride()) and view.numel() == base.numel()):
            first = len(saver.ints)
            for v in (*view.size(), *view.stride(), view.storage_offset() - base.storage_offset()):
                saver.int(v)
            geometry = (first, view.dim())
        return ViewNode(base._slot, view._slot, base_shape, geometry, base.dtype)

    # -- the plan's BackwardSpec --------------------------------------------------------------------------------
    def spec(self, outputs: list, num_args: int) -> Optional[tuple[Optional[TapeLayout], dict]]:
        """What the plan keeps for calls that need a gradient: None if the body applied no Function (the op has
        no backward), (None, {"reason": ...}) if its gradient cannot be a plan's, else (layout, spec fields)."""
        if not self.any_applied:
            return None
        self._guard_requires_grad()
        if not self.applied:
            return None
        try:
            return self.layout(outputs, num_args)
        except NotNative as e:
            return None, {"reason": str(e)}

    def layout(self, outputs: list, num_args: int) -> tuple[TapeLayout, dict]:
        """The layout and the ``BackwardSpec`` fields (the caller adds ``gradient_op``); NotNative if the op's
        gradient cannot be one."""
        if self.not_native is not None:
            raise NotNative(self.not_native)
        output_values = []
        for o in outputs:
            slot = o._slot if isinstance(o, TensorProxy) else None
            if slot is not None and slot in self.untraceable:
                raise NotNative(self.untraceable[slot])
            output_values.append(slot if slot in self.depends else None)
        if all(v is None for v in output_values):
            # The body applied Functions to tensors needing a gradient, and the tape sees none of its outputs
            # depend on them: a gradient op would pass none back. Autograd's own bookkeeping decides instead.
            raise NotNative("no output depends on what the Functions the body applies compute (as the trace "
                            "sees it)")
        saver = ValueSaver(self.tracer)
        nodes: list[Node] = []
        kept: list = []  # the kept tensors, as stand-ins (where the Python path takes each from)

        def shape(t) -> tuple:
            first = len(saver.ints)
            for s in t.shape:
                saver.int(s)
            return (first, t.dim(), t.dtype)

        for r in self.recorded:
            if isinstance(r, _Applied):
                metas = tuple(shape(a) if slot is not None else None for a, slot in zip(r.args, r.inputs))
                outs = tuple(o._slot if isinstance(o, TensorProxy) and o._slot in self.depends else None
                             for o in r.outputs)
                zeros = tuple(shape(o) if isinstance(o, TensorProxy) and r.recording.materialize else None
                              for o in r.outputs)
                first = len(saver.slots)
                try:
                    saved, attrs = saver.context(r.recording)
                except NotNative as e:
                    raise NotNative(f"{r.function.__qualname__}: {e}") from None
                kept.extend(saver.kept[first:])
                nodes.append(FunctionNode(r.function, r.inputs, r.depends, metas, outs, zeros, saved, attrs,
                                          r.recording.materialize))
            elif isinstance(r, _Viewed):
                nodes.append(self._view_node(r, saver, shape))
            else:
                nodes.append(ConversionNode(r.source, r.result, r.dtype))
        sources = _sources(kept, list(outputs), argument=lambda t: _argument_slot(t, num_args), key=lambda t: t._slot)
        arguments = tuple(i if i in self.depends and i in self.arguments else None for i in range(num_args))
        layout = TapeLayout(tuple(nodes), tuple(output_values), arguments, sources, len(saver.slots),
                            len(saver.ints), len(saver.float_args), len(outputs), num_args)
        spec = dict(saver.spec_fields(), differentiable=[int(v is not None) for v in output_values],
                    materialize_grads=False)  # each Function materializes its own, as its node would
        return layout, spec

    def _guard_requires_grad(self) -> None:
        """Which floating arguments require a gradient, as guards: the Functions autograd records depend on it."""
        for slot in self._floating:
            bool(self._requires_grad_of(slot))

    def extras(self, outputs: list, num_args: int) -> list:
        """The kept tensors the forward op returns after the outputs (``TapeLayout.sources``' extras)."""
        if self.any_applied:
            self._guard_requires_grad()
        saver = ValueSaver(self.tracer)
        for r in self.recorded:
            if isinstance(r, _Applied):
                saver.context(r.recording)
        return _extras(saver.kept, _sources(saver.kept, outputs, argument=lambda t: _argument_slot(t, num_args),
                                            key=lambda t: t._slot))


def _sources(kept: list, outputs: list, argument: Callable, key: Callable) -> tuple:
    """Where the Python path takes each kept tensor from: an argument (``argument(t)``: its index, or None), an
    output, or the forward op's extras (each distinct tensor once; ``key(t)`` identifies one: a stand-in's slot,
    a real tensor's id)."""
    out_keys = [key(o) if isinstance(o, torch.Tensor) else None for o in outputs]
    extras: dict = {}
    sources = []
    for t in kept:
        i, k = argument(t), key(t)
        if i is not None:
            sources.append(("arg", i))
        elif k in out_keys:
            sources.append(("output", out_keys.index(k)))
        else:
            sources.append(("extra", extras.setdefault(k, len(extras))))
    return tuple(sources)


def _extras(kept: list, sources: tuple) -> list:
    """The distinct kept tensors ``sources`` calls extras, in order."""
    extras: dict = {}
    for t, (kind, j) in zip(kept, sources):
        if kind == "extra":
            extras.setdefault(j, t)
    return [extras[j] for j in range(len(extras))]


def _argument_slot(t: TensorProxy, num_args: int) -> Optional[int]:
    return t._slot if t._slot < num_args else None


def _non_overlapping(sizes, strides) -> bool:
    """Whether no two elements of a view share memory (its gradient is then a scatter, not a sum)."""
    dims = sorted(((s, st) for s, st in zip(sizes, strides) if s != 1), key=lambda p: p[1])
    extent = 0
    for size, stride in dims:
        if stride <= extent:
            return False
        extent = extent + (size - 1) * stride
    return True


# -- running a Function's forward as apply would ------------------------------------------------------------------


def bound_arguments(cls: type, args: tuple, kwargs: dict) -> tuple:
    """``apply``'s arguments bound to the forward's parameters, defaults filled in (as ``Function.apply`` binds
    them): what ``backward`` returns one gradient for."""
    forward = cls.forward
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return tuple(args)
    leading = () if _is_setup_context_defined(cls.setup_context) else (None,)
    try:
        bound = signature.bind(*leading, *args, **kwargs)
    except TypeError:
        return tuple(args)
    bound.apply_defaults()
    if bound.kwargs:
        return tuple(args)
    return tuple(bound.args[len(leading):])


def run_forward(cls: type, ctx, args: tuple):
    """``cls``'s forward (and setup_context) on ``ctx``, without autograd, as ``apply`` runs them."""
    with torch.no_grad():
        if _is_setup_context_defined(cls.setup_context):
            out = cls.forward(*args)
            cls.setup_context(ctx, args, out)
            return out
        return cls.forward(ctx, *args)


class InlinedContext:
    """The ``ctx`` of a Function's forward that is no node (run from another forward, or taking no tensor that
    needs a gradient): it keeps what the forward sets on it; nothing is differentiated there."""

    def __init__(self, num_inputs: int):
        self.needs_input_grad = (False,) * num_inputs
        self.saved_tensors: tuple = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self.saved_tensors = tensors

    def save_for_forward(self, *tensors) -> None:
        pass

    def mark_dirty(self, *tensors) -> None:  # what a kernel writes is found from the kernels themselves
        pass

    def mark_non_differentiable(self, *tensors) -> None:
        pass

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


def run_inline(cls: type, args: tuple):
    return run_forward(cls, InlinedContext(len(args)), args)


# -- recording, in a real run (the Python path's forward op) ------------------------------------------------------



def _recorded_forward(cls: type, args: tuple, tensor_type: type, needs_input_grad: Callable) -> tuple:
    """``cls``'s forward on a recording ctx (its outputs set on the recording): (what it returned, the recording)."""
    ctx = RecordingContext(needs_input_grad=needs_input_grad, tensor_type=tensor_type)
    _local.depth = _depth() + 1
    try:
        out = run_forward(cls, ctx, args)
    finally:
        _local.depth -= 1
    recording = ctx._recording
    recording.outputs = list(out) if isinstance(out, tuple) else [out]
    return out, recording


class EagerTape:
    """The Functions a real run of the body applies, as a trace's tape records them: what their contexts keep.
    The op's floating tensor arguments need a gradient in that run (autograd then says which tensors depend on
    them, as the trace's tape does); a node's differentiable outputs are made to need one too."""

    def __init__(self):
        self.kept: list = []

    def apply(self, cls: type, args: tuple):
        if _depth() > 0 or not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return run_inline(cls, args)
        out, recording = _recorded_forward(cls, args, torch.Tensor, lambda: tuple(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args))
        non_differentiable = recording.non_differentiable()
        for k, o in enumerate(recording.outputs):
            if isinstance(o, torch.Tensor) and k not in non_differentiable and differentiable(o.dtype):
                o.requires_grad_()
        saver = ValueSaver(None)
        saver.context(recording)
        self.kept.extend(saver.kept)
        return out

    def extras(self, values: tuple, outputs: list) -> list:
        """The kept tensors the forward op returns after the outputs (``TapeLayout.sources``' extras)."""
        sources = _sources(self.kept, outputs, argument=lambda t: next((i for i, v in enumerate(values) if v is t),
                                                                       None), key=id)
        return [t.detach() for t in _extras(self.kept, sources)]


def current_eager_tape() -> Optional[EagerTape]:
    return getattr(_local, "tape", None)


@contextlib.contextmanager
def recording_functions(tape: EagerTape):
    """While the body runs on real tensors: its Functions' contexts recorded into ``tape``."""
    previous = current_eager_tape()
    _local.tape = tape
    try:
        yield tape
    finally:
        _local.tape = previous


def routed_apply(cls: type, args: tuple, kwargs: dict):
    """``Function.apply`` while a trace or a real run records the body's Functions (trace/inlined_calls.py)."""
    _local.routing = getattr(_local, "routing", 0) + 1
    try:
        args = bound_arguments(cls, args, kwargs)
        tracer = current_tracer()
        if tracer is not None:
            tracer.function_applied(cls)
            return tracer.functions.apply(cls, args)
        return current_eager_tape().apply(cls, args)
    finally:
        _local.routing -= 1


def recording() -> bool:
    """Whether this thread records the Functions a body applies (a trace, or a real run of the forward op), and is
    not inside that recording's own run of a Function."""
    return (current_tracer() is not None or current_eager_tape() is not None) and not getattr(_local, "routing", 0)


def applied_through_torch(cls: type, forward: Callable) -> Callable:
    """``cls.forward`` as torch's own ``apply`` (the C entry) finds it, where a library bound ``F.apply`` before the
    trace began (``my_op = MyFunction.apply``): the application routed as ``apply`` is (``torch``'s ctx, which
    needs no gradient there, unused); a ``setup_context`` torch calls next is then skipped. A forward called
    directly (``F.forward(my_ctx, x)``: a library's own forward wrapper) runs as it is."""
    with_ctx = not _is_setup_context_defined(cls.setup_context)

    def forward_of_apply(*args, **kwargs):
        if with_ctx:  # forward(ctx, *inputs): torch's apply passes its own ctx
            if kwargs or not args or not isinstance(args[0], BackwardCFunction):
                return forward(*args, **kwargs)
            return routed_apply(cls, args[1:], {})
        _local.skip_setup_context = cls  # forward(*inputs); torch calls setup_context(ctx, inputs, output) next
        return routed_apply(cls, args, kwargs)

    forward_of_apply.__wrapped__ = forward
    return forward_of_apply


def skips_setup_context(cls: type) -> bool:
    """Whether torch's ``apply`` of ``cls`` is calling the setup_context of an application already routed (not the
    routed application's own reads of it)."""
    if getattr(_local, "skip_setup_context", None) is cls and not getattr(_local, "routing", 0):
        _local.skip_setup_context = None
        return True
    return False


# -- the gradient op's body ----------------------------------------------------------------------------------------


def user_backward(cls: type) -> Callable:
    """The backward autograd runs for ``cls`` (its ``vjp`` where it defines that instead)."""
    backward, vjp = cls.backward, cls.vjp
    if backward is not _Function.backward and vjp is not _Function.vjp:
        raise RuntimeError(f"{cls.__qualname__} implements both 'backward' and 'vjp'; autograd allows only one")
    return vjp if vjp is not _Function.vjp else backward


class _Gradients:
    """Gradients by tape value, summed where a value is used twice (as autograd's input buffers sum them)."""

    def __init__(self):
        self.values: dict[int, Any] = {}

    def add(self, value: int, grad) -> None:
        held = self.values.get(value)
        self.values[value] = grad if held is None else held + grad

    def take(self, value: Optional[int]):
        return None if value is None else self.values.pop(value, None)


def _sizes(ints, meta) -> list:
    first, rank = meta[0], meta[1]
    return list(ints[first:first + rank])


def _fitted(grad, sizes: list, dtype: torch.dtype, where: str):
    """A gradient as the engine passes it on (validate_outputs): summed to the input's sizes where it has more,
    converted to the input's dtype."""
    if list(grad.shape) != list(sizes):
        if grad.dim() < len(sizes) or any(g != s and s != 1 for g, s in zip(grad.shape[grad.dim() - len(sizes):],
                                                                             sizes)):
            raise RuntimeError(f"{where} returned an invalid gradient: got {list(map(int, grad.shape))} but "
                               f"expected shape compatible with {list(map(int, sizes))}")
        grad = grad.sum_to_size(sizes)
    if grad.dtype != dtype:
        grad = grad.to(dtype)
    return grad


def _function_backward(node: FunctionNode, grads: _Gradients, tensors, ints, floats, mask) -> None:
    outs = [grads.take(v) for v in node.outputs]
    if all(g is None for g in outs):
        return  # no gradient reaches the node: autograd does not run it
    needs = NeedsInputGrad(mask, node.depends)
    if not any(needs):
        return  # none of its inputs needs a gradient: eager made no node for it
    if node.materialize:
        like = next(g for g in outs if g is not None)
        for k, meta in enumerate(node.zeros):
            if outs[k] is None and meta is not None:
                outs[k] = zeros_for(_sizes(ints, meta), meta[2], like)
    ctx = ReplayContext(node.saved, node.attrs, tensors, ints, floats, needs)
    backward = user_backward(node.function)
    where = f"{node.function.__qualname__}.backward"
    result = backward(ctx, [*outs]) if getattr(node.function, "boxed_grads_call", False) else backward(ctx, *outs)
    result = result if isinstance(result, tuple) else (result,)
    n = len(node.inputs)
    if len(result) > n and all(g is None for g in result[n:]):
        result = result[:n]
    if len(result) != n:
        raise RuntimeError(f"function {where} returned an incorrect number of gradients (expected {n}, got "
                           f"{len(result)})")
    for k, (value, grad) in enumerate(zip(node.inputs, result)):
        if value is None or grad is None or not needs[k]:
            continue
        if not isinstance(grad, torch.Tensor):
            raise RuntimeError(f"{where} returned a {type(grad).__name__} as the gradient of input {k}")
        meta = node.input_metas[k]
        grads.add(value, _fitted(grad, _sizes(ints, meta), meta[2], where))


def _view_backward(node: ViewNode, grads: _Gradients, ints) -> None:
    grad = grads.take(node.view)
    if grad is None:
        return
    base_sizes = _sizes(ints, node.base_shape)
    if node.geometry is None:
        grads.add(node.base, grad.reshape(base_sizes))
        return
    first, rank = node.geometry
    sizes, strides, offset = ints[first:first + rank], ints[first + rank:first + 2 * rank], ints[first + 2 * rank]
    base = zeros_for(base_sizes, node.dtype, grad)
    base.as_strided(list(sizes), list(strides), offset).copy_(grad)
    grads.add(node.base, base)


def tape_gradient_body(qualname: str, layout: TapeLayout, tensor_args: list) -> Callable:
    """The body of the gradient op of a plan whose Functions are on a tape: its nodes run backwards."""
    t, f, g = layout.num_tensors, layout.num_floats, layout.num_outputs

    def body(*args):
        tensors, ints, floats = args[:t], args[t], args[t + 1:t + 1 + f]
        mask = args[-1]
        grads = _Gradients()
        for value, grad in zip(layout.outputs, args[t + 1 + f:t + 1 + f + g]):
            if value is not None and grad is not None:
                grads.add(value, grad)
        for node in reversed(layout.nodes):
            if isinstance(node, FunctionNode):
                _function_backward(node, grads, tensors, ints, floats, mask)
            elif isinstance(node, ViewNode):
                _view_backward(node, grads, ints)
            else:
                grad = grads.take(node.result)
                if grad is not None:
                    grads.add(node.source, grad if grad.dtype == node.dtype else grad.to(node.dtype))
        return tuple(grads.take(v) if tensor_args[k] else None for k, v in enumerate(layout.arguments))

    return body


def tape_sources(layout: TapeLayout) -> tuple:
    """The user functions a tape's gradient op runs (their lines name its steps and errors)."""
    functions = []
    for node in layout.nodes:
        if isinstance(node, FunctionNode):
            backward = user_backward(node.function)
            backward = inspect.unwrap(backward)
            if backward not in functions and hasattr(backward, "__code__"):
                functions.append(backward)
    return tuple(functions)


def python_ints(spec_ints: list, num_inputs: int) -> bool:
    """Whether the Python path can compute the kept ints from the arguments alone (not from the data, nor from
    tensors the plan makes)."""
    reads = []

    def atom(a: tuple) -> None:
        op = Op(a[0])
        if op == Op.READ or (op in (Op.SIZE, Op.STRIDE, Op.NUMEL, Op.DATA_PTR) and a[1] >= num_inputs):
            reads.append(a)

    for e in spec_ints:
        substitute(e.code, atom)
    return not reads
