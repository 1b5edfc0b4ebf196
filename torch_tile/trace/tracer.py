"""Traces an op body into a launch plan (``_plan.LaunchPlan``, which the C++
runtime takes as it is).

The body runs once per new case with stand-ins for its arguments
(``stand_ins``). Allocations and Triton launches are recorded; Python branches
on sizes become guards. See docs/ARCHITECTURE.md, "One miss".
"""

from __future__ import annotations

import functools
import math
import sys
import weakref
from typing import Any, Optional

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from .. import _C, _plan
from .._errors import CallError, OpDefinitionError, TraceError, TraceOverflowError
from .._launch_mode import LaunchMode, launch_mode
from ..frontends.frontend import Frontend, frontend_names, frontend_of, frontends_tracing
from . import aten_record as _aten_record
from . import escapes as _escapes
from . import expr as _expr
from . import host_values as _host_values
from . import stand_ins as _stand_ins
from . import symbolic_shapes as _symbolic_shapes
from .aten_record import AtenRecorder
from .backward import native_spec
from .call_arguments import PLAN_DTYPES, check_call_arguments
from .data_reads import DataReads, DataValues
from .functions import FunctionTape
from .expr import GuardSink, Op, SymbolicInt
from .driverless_cuda import device_contexts
from .host_random import HostRandomness
from .host_values import HostTensors, makes_host_tensor
from .inlined_calls import inlined_calls
from .stand_ins import SymbolicFloat, TensorMeta, TensorProxy, concrete, contiguous_strides, is_contiguous, \
    is_non_overlapping_and_dense
from .state import body_location, tracing
from .traced_op import TracedOp


_HOST = torch.device("cpu")
_FACTORIES = {
    torch.empty: ("empty", False),
    torch.zeros: ("zeros", True),
    torch.empty_like: ("empty_like", False),
    torch.zeros_like: ("zeros_like", True),
    torch.Tensor.new_empty: ("new_empty", False),
    torch.Tensor.new_zeros: ("new_zeros", True),
}


# Frames of torch_tile itself, skipped when finding the body instruction that made a guard.
_OWN_FILES = (_expr.__file__, _stand_ins.__file__, _aten_record.__file__, _symbolic_shapes.__file__,
              _host_values.__file__, __file__)


def _calling_instruction() -> tuple[int, int]:
    """(frame id, bytecode offset) of the innermost frame outside torch_tile's tracer."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _OWN_FILES:
        frame = frame.f_back
    return (id(frame), frame.f_lasti) if frame is not None else (0, -1)


def _active_instructions() -> set[tuple[int, int]]:
    frame, active = sys._getframe(1), set()
    while frame is not None:
        active.add((id(frame), frame.f_lasti))
        frame = frame.f_back
    return active


class _FactoryMode(TorchFunctionMode):
    """Sees torch calls made without a proxy argument (torch.empty(shape, ...))."""

    def __init__(self, tracer: "Tracer"):
        super().__init__()
        self.tracer = tracer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.tracer.torch_function(func, args, kwargs or {})


def returned(result) -> list:
    """What a body returned, as a list (None: nothing; a tuple or list: its items)."""
    return [] if result is None else list(result) if isinstance(result, (tuple, list)) else [result]


def _is_index_dtype(dtype: torch.dtype) -> bool:
    """Whether torch takes a one-element tensor of ``dtype`` as an index (``Tensor.__index__``): integers only."""
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


class _DeferredZeros(TensorProxy):
    """Zeros allocated in the plan at the first use of their slot (a step, a launch, an
    output), and never if the body only asks their sizes: what a gradient op's body gets for a
    non-differentiable output, whose gradient backwards rarely read (autograd.Function
    materialises those zeros on every call)."""

    requires_grad = False  # asked without allocating them (a backward's zeros need no gradient)

    @staticmethod
    def __new__(cls, tracer: "Tracer", size: list, dtype: torch.dtype):
        return TensorProxy.__new__(cls, tracer, -1, "zeros", _DeferredZeros._meta_of(size, dtype))

    def __init__(self, tracer: "Tracer", size: list, dtype: torch.dtype):
        self._allocated: Optional[TensorProxy] = None
        super().__init__(tracer, -1, "zeros", self._meta_of(size, dtype), list(size), list(contiguous_strides(size)))

    @staticmethod
    def _meta_of(size: list, dtype: torch.dtype) -> TensorMeta:
        values = [s.value if isinstance(s, SymbolicInt) else s for s in size]
        return TensorMeta(values, contiguous_strides(values), dtype)

    @property
    def _slot(self) -> int:
        if self._allocated is None:
            self._allocated = self._tracer._alloc(list(self._sizes), self._meta.dtype, zero=True)
        return self._allocated._slot

    @_slot.setter
    def _slot(self, value: int) -> None:  # TensorProxy.__init__'s placeholder: the slot is the allocation's
        pass


class Tracer(GuardSink, LaunchMode):
    """Runs an op body once on stand-ins and returns its launch plan."""

    records = True

    def __init__(self, op: TracedOp, args: tuple, device: Optional[torch.device] = None, backward: bool = True,
                 data_values: Optional[DataValues] = None):
        """``device``: the device the stand-ins report (default: the first
        tensor argument's); the fake implementation traces meta stand-ins of
        tensors that live elsewhere. ``backward``: trace the op's
        setup_context into the plan's BackwardSpec (only the native path uses it).
        ``data_values``: what a run of the body on this call read from the data (trace/data_reads.py)."""
        self.op = op
        self.call = (op, args, device, backward)  # for a trace of the same call with the data's values
        self.data = DataReads(self, data_values)
        self.reads: list[_plan.ReadStep] = []
        self.checks: list[_plan.CheckStep] = []
        self.constants: list[_plan.ConstantStep] = []
        # id(tensor) -> (the tensor, its stand-in, its index in constants): the tensors the body did not receive
        self._constants: dict[int, tuple[torch.Tensor, TensorProxy, int]] = {}
        self._constant_slots: dict[int, int] = {}  # slot -> index in constants
        self._launch_writes: Optional[list] = None  # _written_tensors(), once the body has run
        self._made_stand_ins: list[weakref.ref] = []  # every stand-in of the trace (see release)
        self._with_backward = backward
        self.num_args = len(args)
        self.guards: dict[tuple[int, ...], str] = {}
        self._allocs_before: dict[tuple[int, ...], int] = {}  # guard -> allocations made before it
        # Guards from int() conversions, with the body instruction that made them.
        self._parse_candidates: list[tuple[tuple[int, ...], SymbolicInt, tuple[int, int]]] = []
        self.tensor_guards: list[tuple[int, torch.dtype, int]] = []
        self.allocs: list[_plan.AllocStep] = []
        self.views: list[_plan.ViewStep] = []
        self.aten_steps: list[_plan.AtenStep] = []
        self.launches: list[_plan.LaunchStep] = []
        self.order: list[_plan.PlanStep] = []
        self.num_made = 0  # tensors the plan makes: they take the slots after the arguments
        self._view_base: dict[int, int] = {}  # view slot -> base slot
        # Slots of tensors the body made on the host in a trace for another device (indices built with torch on the
        # CPU, then moved with .to(x)): ATen steps on the CPU, which no launch takes and no output is.
        self._host_slots: set[int] = set()
        self._byte_offset: dict[int, Any] = {}  # view slot -> bytes from its root's element 0 (an int expression)
        # empty_like slot -> its symbolic (sizes, strides), decided when a shadow first needs them
        self._like_dims: dict[int, Any] = {}
        self._aten_writes: list[tuple[int, int, str]] = []  # (step index, slot, operator) of in-place ATen steps
        self._aten: Optional[AtenRecorder] = None  # made on the body's first ATen call
        self.host_tensors = HostTensors(self)
        self._writes: list[tuple[Frontend, _plan.LaunchStep, Any]] = []  # (frontend, step, its writes) per launch
        self.device: Optional[torch.device] = None
        check_call_arguments(op, args)
        # Input tensors by slot: the tensor arguments at their own index, then
        # the items of Tensor[] arguments (slots num_args.. in argument order).
        self._inputs: dict[int, TensorProxy] = {}
        self._input_values: dict[int, torch.Tensor] = {}  # the call's tensors (autotuning times configs on them)
        self._input_argument: dict[int, int] = {}  # input slot -> the argument holding it
        self.num_inputs = self.num_args
        self.stand_ins = [self._stand_in(i, a) for i, a in enumerate(args)]
        # The autograd.Functions the body applies, and what autograd would record around them (trace/functions.py).
        self.functions = FunctionTape(self, {slot: p for slot, p in self._inputs.items() if slot < self.num_args},
                                      self._requires_grad)
        if device is not None:
            self.device = device
        if self.device is None:
            raise TraceError(f"{op.qualname}: the op needs at least one tensor argument")

    # -- stand-ins ------------------------------------------------------------------------------
    def _stand_in(self, i: int, value: Any):
        name = self.op.arg_names[i]
        kind = self.op.arg_kinds[i]
        if _plan.is_optional(kind):  # None or not selects the plan
            if value is None:
                self.add_guard((Op.IS_NONE, i), f"{name} is None")
                return None
            self.add_guard((Op.IS_NONE, i, Op.NOT), f"{name} is not None")
        if kind in (_plan.ArgKind.INT_LIST, _plan.ArgKind.TENSOR_LIST):  # the plan holds for this length
            self.add_guard((Op.LIST_LEN, i, Op.CONST, len(value), Op.EQ), f"len({name}) == {len(value)}")
        if kind == _plan.ArgKind.INT_LIST:  # its items are symbolic
            return [SymbolicInt((Op.LIST_ITEM, i, k), f"{name}[{k}]", int(v), self) for k, v in enumerate(value)]
        if kind == _plan.ArgKind.TENSOR_LIST:  # its items take the slots after the arguments
            items = []
            for k, item in enumerate(value):
                self.num_inputs += 1
                items.append(self._input_tensor(self.num_inputs - 1, i, f"{name}[{k}]", item))
            return items
        if isinstance(value, str):  # a mode string: the plan holds for this value
            data = value.encode()
            words = [int.from_bytes(data[k:k + 8].ljust(8, b"\0"), "little", signed=True)
                     for k in range(0, len(data), 8)]
            self.add_guard((Op.STR_EQ, i, len(data), *words), f"{name} == {value!r}")
            return value
        if isinstance(value, torch.dtype):
            code = _C.enum_code(value)
            self.add_guard((Op.SCALAR, i, Op.CONST, code, Op.EQ), f"{name} == {value}")
            return value
        if isinstance(value, torch.Tensor):
            return self._input_tensor(i, i, name, value)
        if isinstance(value, bool):
            return SymbolicInt((Op.SCALAR, i), name, int(value), self, is_bool=True)
        if isinstance(value, int):
            return SymbolicInt((Op.SCALAR, i), name, value, self)
        if isinstance(value, float):
            return SymbolicFloat(i, name, value, self)
        if value is None:
            return None
        raise TraceError(f"{self.op.qualname}: argument '{name}' of type {type(value).__name__} is not supported")

    def _requires_grad(self, slot: int):
        """Whether tensor argument ``slot`` requires a gradient in this call, as a bool over the call: the tensor's
        flag (``REQUIRES_GRAD``), or for a forward op, the bit its mask argument gives (trace/functions.py)."""
        mask = self.op.requires_grad_arg
        if mask >= 0:
            return (self.stand_ins[mask] >> slot) & 1
        name = self._inputs[slot]._name
        return SymbolicInt((Op.REQUIRES_GRAD, slot), f"{name}.requires_grad",
                           int(self._input_values[slot].requires_grad), self, is_bool=True)

    def _input_tensor(self, slot: int, arg: int, name: str, value: torch.Tensor) -> TensorProxy:
        if self.device is None:
            self.device = value.device
        self.tensor_guards.append((slot, value.dtype, value.dim()))
        proxy = TensorProxy(self, slot, name, TensorMeta(value.shape, value.stride(), value.dtype))
        self._inputs[slot], self._input_values[slot], self._input_argument[slot] = proxy, value, arg
        return proxy

    # -- GuardSink -------------------------------------------------------------------------------
    def again(self, data_values: DataValues) -> "Tracer":
        """A tracer of the same call that knows what the body reads from the data."""
        op, args, device, backward = self.call
        return Tracer(op, args, device, backward, data_values)

    def add_guard(self, code, text, origin=None):
        code = tuple(_expr.substitute(code, self._atom_over_arguments))
        if self.data.depends_on_data(code):  # decided where the value is known: a Check step here
            self.checks.append(_plan.CheckStep(_plan.Expr(list(code), text), body_location(*self.op.sources)))
            self._made(_plan.StepKind.CHECK, len(self.checks) - 1)
            if origin is not None:
                self._parse_candidates.append((code, origin, _calling_instruction()))
            return
        if code in self.guards:
            return
        self.guards[code] = text
        self._allocs_before[code] = self.num_made
        if origin is not None:
            self._parse_candidates.append((code, origin, _calling_instruction()))
        else:
            self._parse_candidates.clear()

    def _atom_over_arguments(self, atom: tuple):
        """A guard's read of a tensor the plan makes (an empty_like output's strides, read by the launches after
        it exists) as the expression over the arguments it is: guards select the plan before anything is made."""
        op, slot = Op(atom[0]), atom[1] if len(atom) > 1 else -1
        if op not in (Op.SIZE, Op.STRIDE, Op.NUMEL) or slot < self.num_inputs or slot in self.data.shaped:
            return None
        sizes, strides = self.shadow_dims_of_slot(slot)
        if op == Op.NUMEL:
            value = math.prod(sizes) if not any(isinstance(s, SymbolicInt) for s in sizes) else \
                functools.reduce(lambda a, b: a * b, sizes)
        else:
            value = (sizes if op == Op.SIZE else strides)[atom[2]]
        return _expr.encode_int(value, self)[0]

    def note_arithmetic(self):
        self._parse_candidates.clear()

    def track(self, stand_in) -> None:
        self._made_stand_ins.append(weakref.ref(stand_in))

    def release(self) -> None:
        """Ends the trace: the tracer drops everything it holds (its stand-ins above all); the stand-ins the
        body's code kept are then replaced where they are kept by the values they stood for (trace/escapes.py).
        The tracer cannot be used afterwards."""
        qualname, inputs, made = self.op.qualname, self._input_values, self._made_stand_ins
        vars(self).clear()
        survivors = [s for s in (ref() for ref in made) if s is not None]
        if not survivors:
            return

        def value_of(stand_in):
            if isinstance(stand_in, SymbolicInt):
                return bool(stand_in.value) if stand_in.is_bool else stand_in.value
            if isinstance(stand_in, SymbolicFloat):
                return stand_in.value
            is_input = stand_in._sizes is None and stand_in._slot in inputs
            return inputs[stand_in._slot] if is_input else _escapes.DROP

        internal = {id(inner) for s in survivors if isinstance(s, TensorProxy)
                    for inner in (vars(s), s._sizes, s._strides) if inner is not None}
        _escapes.settle(survivors, value_of, internal, qualname)

    def _drop_parse_guards(self, values) -> None:
        # torch's argument parser calls __index__ on shape entries before a
        # TorchFunctionMode sees the call; those conversions are not the body's.
        # They are the ones made at the very instruction (frame and bytecode
        # offset) that is calling the factory now; an earlier explicit int(n)
        # was made at another instruction and keeps its guard.
        ids = {id(v) for v in values if isinstance(v, SymbolicInt)}
        active = _active_instructions()
        for code, origin, instruction in self._parse_candidates:
            if id(origin) in ids and instruction in active:
                self.guards.pop(code, None)
                last = self.order[-1] if self.order else None
                if last is not None and last.kind == _plan.StepKind.CHECK and \
                        tuple(self.checks[last.index].condition.code) == code:
                    self.order.pop()
                    self.checks.pop()
        self._parse_candidates.clear()

    def error(self, message: str, overflow: bool = False, kind: type = TraceError) -> TraceError:
        """``kind`` (a TraceError) of ``message``, naming the op and the body's line."""
        kind = TraceOverflowError if overflow else kind
        return kind(f"{self.op.qualname}: {body_location(*self.op.sources)}: {message}")

    # -- allocations ------------------------------------------------------------------------------
    def _device_of(self, device) -> None:
        if device is None:
            raise self.error("allocations in an op body need device=... (e.g. device=x.device)")
        if torch.device(device) != self.device and not (
            torch.device(device).type == self.device.type and torch.device(device).index is None
        ):
            raise self.error(f"allocation on {device}, but the op's tensors are on {self.device}")

    def torch_function(self, func, args: tuple, kwargs: dict):
        if func is torch.Tensor.tolist and isinstance(args[0], TensorProxy):
            return self.data.tolist(args[0], f"`{args[0]._name}.tolist()`")
        if func in _FACTORIES:
            return self.factory(func, args, kwargs)
        if makes_host_tensor(func, args, kwargs):
            return self.host_tensors.make(func, args, kwargs)
        if self.host_tensors.involved(args, kwargs):
            return self.host_tensors.call(func, args, kwargs)
        # Anything else torch does to tensors: views and ATen steps (trace/aten_record.py).
        self._drop_parse_guards((*args, *kwargs.values()))
        return self.aten.call(func, args, kwargs, f"`{getattr(func, '__name__', func)}`")

    def tensor_method(self, name: str, proxy: TensorProxy, args: tuple, kwargs: dict):
        return self.torch_function(getattr(torch.Tensor, name), (proxy, *args), kwargs)

    def tensor_property(self, name: str, proxy: TensorProxy):
        return self.aten.call(lambda t: getattr(t, name), (proxy,), {}, f"`{proxy._name}.{name}`")

    @property
    def aten(self) -> AtenRecorder:
        if self._aten is None:
            self._aten = AtenRecorder(self)
        return self._aten

    # -- what views and ATen steps need ------------------------------------------------------
    def _made(self, kind, index: int) -> int:
        """Appends a step to the order; returns the first slot it makes."""
        self.order.append(_plan.PlanStep(kind, index))
        return self.num_inputs + self.num_made

    def resolve_atom(self, atom: tuple[int, ...]):
        """The value behind a plan atom for torch's ShapeEnv: an argument's
        size, stride or value (an int), or, for a tensor the plan made, its
        symbolic size or stride over the arguments."""
        op, slot = Op(atom[0]), atom[1]
        if op == Op.READ:
            return self.data.hints[slot]
        if op == Op.SCALAR:
            return concrete(self.stand_ins[slot]) if slot < self.num_args else 0
        if slot in self.data.shaped:
            sizes, strides = self.data.shaped[slot]
            return (sizes if op == Op.SIZE else strides)[atom[2]]
        if op == Op.LIST_ITEM:
            return self.stand_ins[slot][atom[2]].value
        if slot < self.num_inputs:
            proxy = self._inputs[slot]
            return (proxy._meta.sizes if op == Op.SIZE else proxy._meta.strides)[atom[2]]
        sizes, strides = self._like_dims_of(slot)
        value = (sizes if op == Op.SIZE else strides)[atom[2]]
        return value if isinstance(value, SymbolicInt) else int(value)

    def atom_name(self, atom: tuple[int, ...]) -> str:
        op, slot = Op(atom[0]), atom[1]
        if op == Op.READ:
            return self.data.names[slot]
        if op in (Op.SCALAR, Op.LIST_ITEM):
            name = self.op.arg_names[slot]
            return name if op == Op.SCALAR else f"{name}[{atom[2]}]"
        name = self._inputs[slot]._name if slot < self.num_inputs else f"out{slot - self.num_inputs}"
        return f"{name}.{'size' if op == Op.SIZE else 'stride'}({atom[2]})"

    def _like_dims_of(self, slot: int) -> tuple[list, list]:
        if slot not in self._like_dims:
            raise self.error(f"tensor slot {slot} has no symbolic sizes")
        dims = self._like_dims[slot]
        if callable(dims):
            dims = self._like_dims[slot] = dims()
        return dims

    def shadow_dims_of_slot(self, slot: int) -> tuple[list, list]:
        if slot < self.num_inputs:
            return self.shadow_dims(self._inputs[slot])
        if slot in self.data.shaped:
            return self.data.shaped[slot]
        return self._like_dims_of(slot)

    def shadow_dims(self, proxy: TensorProxy) -> tuple[list, list]:
        """Sizes and strides of a stand-in over the arguments only (what its
        shadow FakeTensor gets)."""
        if proxy._sizes is not None and proxy._strides is not None:  # made by the body
            return proxy._sizes, proxy._strides
        if proxy._slot < self.num_inputs:
            return self._argument_dims(proxy)
        return self._like_dims_of(proxy._slot)  # empty_like: its strides depend on the source's layout

    def _argument_dims(self, proxy: TensorProxy) -> tuple[list, list]:
        """An argument's strides as torch.compile sees them: where a stride is
        what a dense layout (in this call's stride order) makes of the sizes,
        it is that expression, guarded; any other is this call's value, guarded.
        ATen then decides views and contiguity from sizes alone."""
        sizes, strides, m = list(proxy.size()), list(proxy.stride()), proxy._meta
        out: list = [None] * len(sizes)
        expected = 1
        for d in sorted(range(len(sizes)), key=lambda d: (m.strides[d], m.sizes[d])):
            out[d] = expected if strides[d] == expected else strides[d].specialize()
            expected = _expr.sym_max(sizes[d], 1) * out[d]
        return sizes, out


    def add_view(self, base: TensorProxy, meta: TensorMeta, sizes: list, strides: list, offset,
                 operator: Optional[str] = None) -> TensorProxy:
        """A view of ``base`` (made by the ATen ``operator``; None: by the tracer itself)."""
        enc = [_plan.expr(_expr.encode_int(v, self)) for v in (*sizes, *strides, offset)]
        n = len(sizes)
        self.views.append(_plan.ViewStep(base._slot, enc[:n], enc[n:2 * n], enc[2 * n], meta.dtype))
        slot = self._made(_plan.StepKind.VIEW, len(self.views) - 1)
        self.num_made += 1
        self._view_base[slot] = base._slot
        # Its address, from its root's: bytes past the root's element 0 (the base's offset plus its own, which
        # counts the view's elements: a complex tensor's real view counts floats).
        self._byte_offset[slot] = self._byte_offset.get(base._slot, 0) + offset * meta.dtype.itemsize
        view = TensorProxy(self, slot, f"{base._name}_view{slot}", meta, sizes, strides)
        self.functions.view(base, view, operator)
        return view

    def add_aten_step(self, step, metas: list, written_slots: Optional[list] = None) -> list:
        self.aten_steps.append(step)
        first = self._made(_plan.StepKind.ATEN, len(self.aten_steps) - 1)
        self.num_made += len(metas)
        for slot in written_slots or []:
            self._aten_writes.append((len(self.aten_steps) - 1, slot, f"{step.name} (at {step.site})"))
        tensors = [s for a in step.args if a.kind in (_plan.AtenArgKind.TENSOR, _plan.AtenArgKind.TENSOR_LIST,
                                                      _plan.AtenArgKind.OPTIONAL_TENSOR_LIST) for s in a.slots]
        self.functions.aten(step.name, tensors, [(first + k, m.dtype) for k, (m, _, _) in enumerate(metas)],
                            list(written_slots or []))
        return [TensorProxy(self, first + k, f"{step.name.split('::')[-1]}{first + k}", meta, sizes, strides)
                for k, (meta, sizes, strides) in enumerate(metas)]

    def device_of(self, proxy: TensorProxy) -> torch.device:
        """Where ``proxy``'s tensor is: the op's device, or the host for what the body made there."""
        return _HOST if self.on_host(proxy) else self.device

    def on_host(self, proxy: TensorProxy) -> bool:
        """Whether the body made ``proxy``'s tensor on the host in a trace for another device."""
        return self.root_slot(proxy._slot) in self._host_slots

    def made_on_host(self, proxies: list) -> None:
        """``proxies`` (an ATen step's results) are on the host, not the op's device."""
        self._host_slots.update(p._slot for p in proxies)

    def next_slot(self) -> int:
        """The slot the next tensor the plan makes takes."""
        return self.num_inputs + self.num_made

    def add_read(self, slot: int, count: int = 1) -> int:
        """A Read step of ``slot``'s ``count`` elements; returns the index of its first value (``READ k``)."""
        first = sum(r.count for r in self.reads)
        self.reads.append(_plan.ReadStep(slot, body_location(*self.op.sources), count))
        self._made(_plan.StepKind.READ, len(self.reads) - 1)
        return first

    def root_slot(self, slot: int) -> int:
        """The slot whose memory a view reads (the slot itself for others)."""
        while slot in self._view_base:
            slot = self._view_base[slot]
        return slot

    def data_ptr(self, proxy: TensorProxy):
        """``x.data_ptr()``: the tensor's address, read per call where a step takes it; for alignment checks, an
        argument's address, or a tensor the plan makes, whose memory the caching allocator aligns
        (ALLOCATION_ALIGNMENT), plus a view's offset (guards are decided before the plan makes anything)."""
        root = self.root_slot(proxy._slot)
        offset = self._byte_offset.get(proxy._slot, 0)
        name = f"{proxy._name}.data_ptr()"
        if root < self.num_inputs:
            try:
                address = int(self._input_values[root].data_ptr())
            except Exception:  # fake and meta tensors have no data: read as aligned
                address = 0
            base = SymbolicInt((Op.DATA_PTR, root), f"{self._inputs[root]._name}.data_ptr()", address, self)
            alignment = 0
        else:
            base, alignment = SymbolicInt((Op.CONST, 0), "0", 0, self), _stand_ins.ALLOCATION_ALIGNMENT
        aligned = base + offset
        return _stand_ins.SymbolicAddress((Op.DATA_PTR, proxy._slot), name, aligned.value, self, aligned.code,
                                          alignment=alignment, tensor=proxy)

    def pointer_view(self, address, dtype: torch.dtype, where: str) -> TensorProxy:
        """What an object with ``data_ptr()`` and ``dtype`` points at, which Triton's launcher takes as a pointer
        of that type: a view of one element of ``dtype`` at ``address``, in the tensor the address is of (an
        element of the same width, whole elements past its address); none where that tensor has no element."""
        tensor = getattr(address, "tensor", None)
        if tensor is None:
            raise self.error(f"{where} receives an object whose data_ptr() is {address!r}, memory the op did not "
                             "take or allocate; pass the tensor (or a view of it)")
        width = dtype.itemsize
        if tensor._meta.dtype.itemsize != width:
            raise self.error(f"{where} receives a {dtype} pointer into a {tensor._meta.dtype} tensor; a launch plan "
                             "reads a tensor's memory as elements of its own width")
        if address.displacement % width != 0:  # a guard where the displacement is symbolic
            raise self.error(f"{where} receives a {dtype} pointer {address.displacement} bytes into a tensor: "
                             f"not a whole number of {width}-byte elements")
        size = _expr.sym_min(math.prod(tensor.size()), 1)
        meta = TensorMeta([int(getattr(size, "value", size))], [1], dtype)
        return self.add_view(tensor, meta, [size], [1], address.displacement // width)

    def constant(self, tensor: torch.Tensor, where: str) -> TensorProxy:
        """The stand-in of a tensor the body neither received nor made (module or library state: a lookup table,
        a buffer the library keeps): a Constant step, the plan holding the tensor (weakly, so its owner still frees
        it; a call after that traces again). One slot per tensor, however often the body uses it."""
        known = self._constants.get(id(tensor))
        if known is not None:
            return known[1]
        with torch._C.DisableTorchFunction():  # its metadata, read here, is no torch call of the body
            return self._new_constant(tensor, where)

    def held(self, tensor: torch.Tensor) -> Optional[TensorProxy]:
        """The stand-in of ``tensor`` where the plan holds it (``constant``), else None."""
        known = self._constants.get(id(tensor))
        return None if known is None else known[1]

    def _new_constant(self, tensor: torch.Tensor, where: str) -> TensorProxy:
        if self.host_tensors.involved((tensor,), {}):  # made by the body from host values: its values are the call's
            raise self.error(f"{where} uses a tensor of host values the body made: make it on the op's device "
                             "(device=...) so that the plan makes it")
        if isinstance(tensor, FakeTensor) or tensor.layout != torch.strided:
            raise self.error(f"{where} uses a tensor the op did not take ({type(tensor).__name__}, {tensor.layout}), "
                             "which a launch plan cannot hold: pass it as an argument")
        if tensor.device != self.device:
            raise self.error(f"{where} uses a tensor on {tensor.device} the op did not take; the op's tensors are on "
                             f"{self.device}")
        if tensor.requires_grad:
            raise self.error(f"{where} uses a tensor that requires a gradient the op did not take: its gradient would "
                             "not reach it (an op's gradients go to its arguments): pass it as an argument")
        self.check_dtype(tensor.dtype, f"{where}: a tensor the op did not take")
        self.constants.append(_plan.ConstantStep(tensor, body_location(*self.op.sources)))
        slot = self._made(_plan.StepKind.CONSTANT, len(self.constants) - 1)
        self.num_made += 1
        sizes, strides = list(tensor.shape), list(tensor.stride())
        proxy = TensorProxy(self, slot, f"constant{len(self.constants) - 1}", TensorMeta(sizes, strides, tensor.dtype),
                            sizes, strides)
        self._constants[id(tensor)] = (tensor, proxy, len(self.constants) - 1)
        self._constant_slots[slot] = len(self.constants) - 1
        return proxy

    def factory(self, func, args: tuple, kwargs: dict) -> TensorProxy:
        name, zero = _FACTORIES[func]
        kwargs = dict(kwargs)
        for unsupported in ("out", "names"):
            if kwargs.pop(unsupported, None) is not None:
                raise self.error(f"{name}(..., {unsupported}=...) is not supported in an op body")
        if kwargs.pop("layout", None) not in (None, torch.strided):
            raise self.error(f"{name}(layout=...): the tensors a launch plan makes are strided")
        if kwargs.pop("pin_memory", None) and self.device.type != "cpu":
            raise self.error(f"{name}(pin_memory=True) pins host memory; the op's tensors are on {self.device}")
        kwargs.pop("requires_grad", None)  # an op's outputs get their autograd from the op, as torch.library's
        memory_format = kwargs.pop("memory_format", None)
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        if kwargs:
            raise self.error(f"{name}() got unsupported arguments {sorted(kwargs)}")
        if name in ("empty_like", "zeros_like"):
            (src,) = args
            if device is not None:
                self._device_of(device)
            if memory_format in (None, torch.preserve_format):
                return self._alloc_like(src, dtype or src.dtype, zero)
            return self._alloc_in(memory_format, list(src.size()), dtype or src.dtype, zero, name)
        if name in ("new_empty", "new_zeros"):
            src, *size = args
            dtype = dtype or src.dtype
            self._device_of(device or self.device)
        else:
            size = list(args)
            dtype = dtype or torch.get_default_dtype()
            self._device_of(device)
        if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
            size = list(size[0])
        # torch takes a 0-d integer tensor as an index, its value: a read of the data, as eager's.
        size = [s.item() if isinstance(s, TensorProxy) and s.dim() == 0 and _is_index_dtype(s.dtype) else s
                for s in size]
        self._drop_parse_guards(size)
        return self._alloc_in(memory_format or torch.contiguous_format, size, dtype, zero, name)

    # The dimension order of each channels-last memory format, outermost stride first, by rank.
    _CHANNELS_LAST = {torch.channels_last: (4, [0, 2, 3, 1]), torch.channels_last_3d: (5, [0, 2, 3, 4, 1])}

    def _alloc_in(self, memory_format, size: list, dtype: torch.dtype, zero: bool, name: str) -> TensorProxy:
        """An allocation of ``size`` laid out in ``memory_format``: contiguous, or channels-last (a contiguous
        allocation of the permuted sizes, viewed in the logical order: the layout torch gives it)."""
        if memory_format == torch.contiguous_format:
            return self._alloc(size, dtype, zero)
        if memory_format not in self._CHANNELS_LAST:
            raise self.error(f"{name}(memory_format={memory_format}): a launch plan allocates contiguous and "
                             "channels-last layouts", kind=CallError)
        rank, order = self._CHANNELS_LAST[memory_format]
        if len(size) != rank:
            raise self.error(f"{name}(memory_format={memory_format}) needs {rank} sizes, got {len(size)}",
                             kind=CallError)
        base = self._alloc([size[d] for d in order], dtype, zero)
        sizes, strides = [None] * rank, [None] * rank
        for position, d in enumerate(order):
            sizes[d], strides[d] = base.size(position), base.stride(position)
        meta = TensorMeta([concrete(s) for s in sizes], [concrete(s) for s in strides], dtype)
        return self.add_view(base, meta, sizes, strides, 0)

    def check_dtype(self, dtype, what: str = "allocation") -> None:
        """A tensor the body makes (``what``) must have a dtype a launch plan holds (complex too: kernels refuse it
        where it is passed to them, see ``frontends.launch_record.value_binding``)."""
        if dtype not in PLAN_DTYPES:
            raise self.error(f"{what} of dtype {dtype}: a launch plan holds {sorted(map(str, PLAN_DTYPES))}")

    def _new_output(self, meta: TensorMeta, sizes: list, strides: Optional[list] = None) -> TensorProxy:
        slot = self._made(_plan.StepKind.ALLOC, len(self.allocs) - 1)
        self.num_made += 1
        return TensorProxy(self, slot, f"out{len(self.allocs) - 1}", meta, sizes, strides)

    def deferred_zeros(self, size: list, dtype: torch.dtype) -> TensorProxy:
        """``torch.zeros(size, dtype)`` that the plan allocates only if the body uses it."""
        return _DeferredZeros(self, size, dtype)

    def _alloc(self, size: list, dtype: torch.dtype, zero: bool) -> TensorProxy:
        self.check_dtype(dtype)
        if len(size) > _C.MAX_SHAPE_RANK:
            raise self.error(f"allocation of rank {len(size)}; at most {_C.MAX_SHAPE_RANK} is supported")
        shape = []
        values = []
        for s in size:
            if not isinstance(s, (int, SymbolicInt)) or isinstance(s, bool):
                raise self.error(f"allocation size {s!r} is not an int")
            shape.append(_expr.encode_int(s, self))
            values.append(s.value if isinstance(s, SymbolicInt) else s)
        if any(c < 0 for c in values):
            raise self.error(f"negative allocation size {values}")
        if 0 not in values and math.prod(values) * dtype.itemsize > _expr.INT64_MAX:
            raise self.error(f"allocation of shape {values} and dtype {dtype} would need more than 2^63 bytes")
        self.allocs.append(_plan.AllocStep(_plan.AllocKind.EMPTY, [_plan.expr(s) for s in shape], -1, dtype, zero))
        # Sizes over the arguments, so that a branch on them is a guard the plan can check before it runs.
        return self._new_output(TensorMeta(values, contiguous_strides(values), dtype), list(size),
                                list(contiguous_strides(size)))

    def _alloc_like(self, src, dtype: torch.dtype, zero: bool) -> TensorProxy:
        if not isinstance(src, TensorProxy):
            raise self.error("empty_like/zeros_like need a tensor of the op")
        self.check_dtype(dtype)
        self._parse_candidates.clear()
        self.allocs.append(_plan.AllocStep(_plan.AllocKind.EMPTY_LIKE, [], src._slot, dtype, zero))
        m = src._meta
        # Same rule as the C++ allocator: keep a dense source's strides, else contiguous.
        dense = is_non_overlapping_and_dense(m.sizes, m.strides)
        proxy = self._new_output(TensorMeta(m.sizes, m.strides if dense else contiguous_strides(m.sizes), dtype),
                                 list(src.size()))
        self._like_dims[proxy._slot] = lambda: self._dims_like(src)
        return proxy

    def _dims_like(self, src: TensorProxy) -> tuple[list, list]:
        """Symbolic sizes and strides of empty_like(src), for shadows only (so
        plans that never need them carry no guard): a contiguous source's
        strides, as torch's empty_like keeps them; any other layout is
        specialised to this call's."""
        sizes, strides = self.shadow_dims(src)
        if is_contiguous(sizes, strides):
            return list(sizes), list(strides)
        m = src._meta
        for v in (*sizes, *strides):
            if isinstance(v, SymbolicInt):
                v.specialize()
        dense = is_non_overlapping_and_dense(m.sizes, m.strides)
        return list(m.sizes), list(m.strides if dense else contiguous_strides(m.sizes))

    # -- launches --------------------------------------------------------------------------------------
    def launch(self, kernel, grid, args, kwargs):
        self._parse_candidates.clear()
        args, kwargs = self.host_tensors.on_device((args, kwargs))
        args, kwargs = pytree.tree_map_only(
            torch.Tensor, lambda t: t if isinstance(t, TensorProxy) else self.constant(t, "the launch"), (args, kwargs))
        on_host = next((t for t in pytree.tree_leaves((args, kwargs))
                        if isinstance(t, TensorProxy) and self.on_host(t)), None)
        if on_host is not None:
            raise self.error(f"{kernel!r} is given '{on_host._name}', a tensor the body made on the host; the kernel "
                             f"runs on {self.device}: move it there first (.to(x.device))")
        frontend = frontend_of(kernel)
        if frontend is None:
            raise self.error(f"{kernel!r} is launched like a kernel, but is not one of any frontend "
                             f"({', '.join(frontend_names())})")
        step, written = frontend.record_launch(self, kernel, grid, args, kwargs)
        self.launches.append(step)
        self._made(_plan.StepKind.LAUNCH, len(self.launches) - 1)
        self._writes.append((frontend, step, written))
        return None

    def function_applied(self, function: type) -> None:
        """The body ran ``function.apply`` (an autograd.Function), inline (trace/inlined_calls.py): calls of the op
        that need a gradient get the Function's own backward."""
        self.op.function_applied()

    # -- the whole trace ---------------------------------------------------------------------------------
    def run(self) -> dict:
        # A tensor subclass's __torch_function__ calls the op with subclass
        # handling disabled, which would hide the stand-ins' own handler.
        host_random = HostRandomness()
        with tracing(self), torch._C._EnableTorchFunction(), launch_mode(self), _FactoryMode(self), \
                frontends_tracing(), inlined_calls(), device_contexts(self.device):
            result = self.op.call_body(self.stand_ins)
            backward = None
            if self._with_backward:
                outputs = returned(result)
                backward = native_spec(self.op, self, result, outputs) if self.op.backward_fn is not None else \
                    self.functions.spec(outputs, len(self.op.arg_names))
        drawn = host_random.drawn()
        if drawn:
            raise self.error(f"the body draws random numbers on the host ({', '.join(drawn)}), which a launch "
                             "plan would replay unchanged on every call; draw them outside the op and pass them as "
                             "arguments, or on the device (torch.randint on the op's device)")
        return self._finish(result, backward)

    def checkpoint(self) -> tuple:
        """What the plan holds so far (to drop what a failed ``setup_context`` trace added)."""
        return (len(self.order), len(self.allocs), len(self.views), len(self.aten_steps), len(self.launches),
                self.num_made, list(self.guards), len(self._writes), len(self._aten_writes), len(self.reads),
                len(self.checks), len(self.constants))

    def rollback(self, checkpoint: tuple) -> None:
        order, allocs, views, aten_steps, launches, self.num_made, guards, writes, aten_writes, reads, checks, \
            constants = checkpoint
        del self.reads[reads:], self.checks[checks:], self.constants[constants:]
        self._constants = {k: v for k, v in self._constants.items() if v[2] < constants}
        self._constant_slots = {k: v for k, v in self._constant_slots.items() if v < constants}
        del self.order[order:], self.allocs[allocs:], self.views[views:], self.aten_steps[aten_steps:]
        del self.launches[launches:], self._writes[writes:], self._aten_writes[aten_writes:]
        self.guards = {code: self.guards[code] for code in guards}

    def _argument_writes(self) -> dict:
        """What each step that writes the op's arguments writes: ``(StepKind, index)`` -> {argument: the kernel
        parameter or operator writing it}, in step-list order (ATen steps, then launches); None for a launch whose
        writes its frontend cannot analyse."""
        writes: dict = {}
        for index, slot, operator in self._aten_writes:
            root = self.root_slot(slot)
            if root < self.num_inputs:
                writes.setdefault((_plan.StepKind.ATEN, index), {}).setdefault(self._input_argument[root], operator)
        for index, (frontend, step, launch_writes) in enumerate(self._written_tensors()):
            if launch_writes is None:
                writes[(_plan.StepKind.LAUNCH, index)] = None
                continue
            for label, root in launch_writes:
                if root < self.num_inputs:
                    writes.setdefault((_plan.StepKind.LAUNCH, index), {}).setdefault(self._input_argument[root], label)
        return writes

    def _written_tensors(self) -> list:
        """Per launch, in order: (frontend, step, [(label, root slot written)]), or None for its writes where its
        frontend cannot analyse them. Once the body has run (its launches are all known)."""
        if self._launch_writes is not None:
            return self._launch_writes
        out = []
        for frontend, step, launch_writes in self._writes:
            stored = frontend.written_tensors(self.op.qualname, step, launch_writes)
            out.append((frontend, step, None if stored is None else [
                (label, self.root_slot(value._slot) if isinstance(value, TensorProxy) else self.num_inputs)
                for label, value in stored]))
        self._launch_writes = out
        return out

    def _constant_writes(self) -> set:
        """The steps that write a tensor the plan holds (module or library state), as (StepKind, index)."""
        steps = {(_plan.StepKind.ATEN, index) for index, slot, _ in self._aten_writes
                 if self.root_slot(slot) in self._constant_slots}
        for index, (_, _, launch_writes) in enumerate(self._written_tensors()):
            if launch_writes is not None and any(root in self._constant_slots for _, root in launch_writes):
                steps.add((_plan.StepKind.LAUNCH, index))
        return steps

    def _check_mutations(self, writes: dict) -> None:
        """Every input the op's kernels write must be declared in mutates_args. A declared argument a call does not
        write is no error: a body may write an argument in some calls only (in place where it is contiguous, into
        a copy elsewhere; an optional output passed as None), and eager leaves it as it was, as the plan does."""
        if any(w is None for w in writes.values()) or self.op.is_gradient_op:
            # Not analysable: trust the declaration. A backward may write what autograd hands it (a gradient, a
            # saved buffer) in place, as libraries' backwards do: the gradient op's arguments are the engine's.
            return
        written: dict[int, str] = {}  # input argument -> "kernel(parameter)" writing it
        for step_writes in writes.values():
            for argument, what in step_writes.items():
                written.setdefault(argument, what)
        declared = set(self.op.mutated_args)
        names = self.op.arg_names
        undeclared = sorted(set(written) - declared)
        if undeclared:
            raise OpDefinitionError(
                f"{self.op.qualname}: {written[undeclared[0]]} writes argument '{names[undeclared[0]]}', "
                f"which the op does not declare: add it to mutates_args (declared: "
                f"{[names[i] for i in sorted(declared)] or 'none'})"
            )

    def _check_nothing_written_before_checks(self, writes: dict) -> None:
        """A call whose data fails a check runs the body instead, on the arguments as they came: no step before
        the last check may write one (a launch whose writes are not known counts as writing)."""
        if not self.checks:
            return
        held = self._constant_writes()  # state the plan holds, which the body would write again
        last_check = max(i for i, s in enumerate(self.order) if s.kind == _plan.StepKind.CHECK)
        for s in self.order[:last_check]:
            if (s.kind, s.index) not in writes and (s.kind, s.index) not in held:
                continue
            step = self.launches[s.index] if s.kind == _plan.StepKind.LAUNCH else self.aten_steps[s.index]
            what = f"the launch at {step.site}" if s.kind == _plan.StepKind.LAUNCH else f"{step.name} at {step.site}"
            what += " writes an argument of the op" if (s.kind, s.index) in writes else \
                " writes a tensor the op did not take (module or library state)"
            check = self.checks[self.order[last_check].index]
            raise self.error(f"{what} before the body decides `{check.condition.text}` "
                             "on a value read from the data: a call the plan cannot follow could not run the body "
                             "on the arguments as they came")

    def _finish(self, result, backward=None) -> _plan.LaunchPlan:
        results = returned(result)
        if self.op.returns_list:  # one Tensor[]: any number of tensors
            if not isinstance(result, (tuple, list)):
                raise OpDefinitionError(
                    f"{self.op.qualname}: the schema returns Tensor[]; the body returned {type(result).__name__}")
        elif len(results) != self.op.num_returns:
            raise OpDefinitionError(
                f"{self.op.qualname}: the body returned {len(results)} value(s); the schema declares "
                f"{self.op.num_returns}"
            )
        outputs = []
        for r in results:
            if self.op.is_gradient_op and r is None:
                outputs.append(-1)  # a None gradient
                continue
            if not isinstance(r, TensorProxy):
                raise OpDefinitionError(f"{self.op.qualname}: the body must return tensors, got {r!r}")
            k = len(outputs)
            declared = self.op.returned_args[k] if not self.op.returns_list and k < len(self.op.returned_args) else -1
            if declared >= 0 and r._slot != declared:
                raise self.error(f"the schema declares return {k} to be argument "
                                 f"'{self.op.arg_names[declared]}' itself; the body returns another tensor",
                                 kind=OpDefinitionError)
            if self.on_host(r):
                raise self.error(f"the body returns '{r._name}', a tensor it made on the host; the op's results are "
                                 f"on {self.device} (its fake implementation says so)")
            held = self._constant_slots.get(self.root_slot(r._slot))
            if held is not None:
                raise self.error(f"the body returns a tensor it did not receive (or a view of one), first used at "
                                 f"{self.constants[held].site}: an op's results are its own (return a copy: "
                                 ".clone())")
            outputs.append(r._slot)
        self._release_constants()
        # As in eager, an output may be an input, a view of one (a wrapper that writes in place and returns what
        # it wrote) or another output: the op returns copies of them (NativeOp::push_outputs). Their gradients are
        # the autograd.Function's (native backward plans save outputs by slot, which these are not).
        aliased = any(self.root_slot(s) < self.num_inputs for s in outputs if s >= 0) or \
            len(set(outputs)) != len(outputs)
        if aliased and not self.op.is_gradient_op and backward is not None:
            backward = (None, {"reason": "the body returns its inputs (or views of them)"})
        writes = self._argument_writes()
        self._check_mutations(writes)
        self._check_nothing_written_before_checks(writes)
        # Guards made before the last allocation can change output shapes (a
        # prefix: guards are kept in the order they were made); later ones only
        # choose launches, and the fake implementation skips them.
        num_shape_guards = sum(1 for code in self.guards if self._allocs_before[code] < self.num_made)
        return _plan.LaunchPlan(
            tensor_guards=[_plan.TensorGuard(arg, dtype, ndim) for arg, dtype, ndim in self.tensor_guards],
            guards=[_plan.Expr(list(code), text) for code, text in self.guards.items()],
            num_shape_guards=num_shape_guards,
            allocs=self.allocs,
            launches=self.launches,
            outputs=outputs,
            num_list_tensors=self.num_inputs - self.num_args,
            views=self.views,
            aten_steps=self.aten_steps,
            order=self.order,
            backward=self._backward_spec(backward),
            reads=self.reads,
            checks=self.checks,
            constants=self.constants,
        )

    def _release_constants(self) -> None:
        """Lets go of the tensors the trace held for its Constant steps: one that only the trace kept alive (a tensor
        the body computed for real, outside the plan's steps) is gone now, and no plan can hold it."""
        self._constants = {}
        for step in self.constants:
            if step.tensor() is None:
                raise self.error(f"the tensor the body uses at {step.site} was computed during the trace, outside the "
                                 "plan's steps: no plan can hold it (compute it from the op's arguments, or pass it "
                                 "as an argument)")

    def check_own_call(self, plan: _plan.LaunchPlan) -> None:
        """Every guard of the plan must hold for the call that traced it: a plan that refused its own call would
        be traced again at every call. Evaluated here, in Python, as C++ evaluates it."""
        tensors = [self._input_values.get(slot) for slot in range(self.num_inputs)]
        for arg, dtype, ndim in self.tensor_guards:
            if (tensors[arg].dtype, tensors[arg].dim()) != (dtype, ndim):
                raise TraceError(f"{self.op.qualname}: the traced plan's tensor guard on slot {arg} does not hold for "
                                 "the call that traced it")
        scalars = [_C.enum_code(v) if isinstance(v, torch.dtype) else
                   [concrete(i) for i in v] if isinstance(v, list) else concrete(v) for v in self.stand_ins]
        for guard in plan.guards:  # after the trace: its modes are gone
            if not _expr.evaluate(guard.code, tensors, scalars):
                raise TraceError(f"{self.op.qualname}: the traced plan's guard `{guard.text}` does not hold for the "
                                 "call that traced it")

    def fallback_plan(self, reason: str) -> _plan.LaunchPlan:
        """The plan of calls that run the body itself (see _fallback.py): the guards taken up to where the trace
        failed (every call that passes them takes the same path to the same failure), and why."""
        return _plan.LaunchPlan(
            tensor_guards=[_plan.TensorGuard(arg, dtype, ndim) for arg, dtype, ndim in self.tensor_guards],
            guards=[_plan.Expr(list(code), text) for code, text in self.guards.items()],
            num_shape_guards=0, allocs=[], launches=[], outputs=[], order=[],
            num_list_tensors=self.num_inputs - self.num_args, fallback=reason)

    def _backward_spec(self, backward) -> Optional[_plan.BackwardSpec]:
        if backward is None:
            return None
        layout, fields = backward
        if layout is None:
            return _plan.BackwardSpec("", **fields)
        return _plan.BackwardSpec(self.op.gradient_op_name(layout), **fields)
