"""Values a body reads from its tensors' data: ``.item()``, ``int(t)``, ``bool(t)`` (an ``if`` or an ``assert`` on
a tensor), and the sizes of results the data decides (``nonzero``, a boolean mask's selection, ``unique``).

A launch plan reads them natively: a Read step copies one element to the host on the call's stream, waiting for
the work before it as eager ``.item()`` does, and later expressions use the value (``READ k``); a result whose
size is data has size atoms of its own (``SIZE slot d``), read from the tensor the step made. Stand-ins have no
data, so the values of the call being traced come from one run of the body before the trace
(``learn_data_values``: on the call's arguments, with copies of those it writes and new objects for the others,
which caches keyed by identity miss as they miss for stand-ins), recorded in order with the
body's line that asked for each. With them the trace takes the path the call takes; what the body decides with
a value (a branch, an assert, a guard torch takes on a size) becomes a Check step where it is decided, and calls
whose data decides otherwise leave the plan there and run the body.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .._errors import TraceError
from .._plan import ExprOp as Op
from .expr import SymbolicInt, substitute
from .stand_ins import is_non_overlapping_and_dense

# The namespaces of torch's own operators (others are registered custom ops).
_TORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "torch_tile"})
# Operators that hand one element of a tensor to the host.
READ_OPERATORS = ("item", "_local_scalar_dense", "is_nonzero")
_TORCH_TILE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Frames that are not the body's: torch's, and torch_tile's own (its example ops' bodies are bodies).
_NOT_BODY_DIRS = (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep, _TORCH_TILE_DIR)
_BODY_DIRS = (os.path.join(_TORCH_TILE_DIR, "kernels") + os.sep,)


class NeedsDataValues(TraceError):
    """The body reads its tensors' data and the trace has no values for it: learn them (one run of the body) and
    trace again."""


@dataclass
class DataEvent:
    kind: str  # "read": one value; "list": ``.tolist()``'s values; "shape": the sizes of an operator's results
    site: str  # the body's (or its library's) line that asked: the first frame outside torch and torch_tile
    name: str  # the kind, or the operator ("aten::nonzero")
    value: Any  # the int read, the ints of the list (row-major), or (sizes, strides) per tensor result


def _site() -> str:
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_NOT_BODY_DIRS) or path.startswith(_BODY_DIRS):
            break
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


class DataValues:
    """What one run of the body read, and how far the trace has used it."""

    def __init__(self, events: list[DataEvent]):
        self.events = events
        self._next = 0

    def take(self, kind: str, name: str) -> Optional[DataEvent]:
        """The next recorded event of this kind, operator and line (events of other lines, such as an autotuner's
        timing, are passed over), or None."""
        site = _site()
        for i in range(self._next, len(self.events)):
            e = self.events[i]
            if (e.kind, e.name, e.site) == (kind, name, site):
                self._next = i + 1
                return e
        return None


class _Recording(TorchDispatchMode):
    def __init__(self, events: list[DataEvent]):
        super().__init__()
        self.events = events

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        short = func._schema.name.split("::")[-1]
        if short in READ_OPERATORS:
            self.events.append(DataEvent("read", _site(), "read", out))
        elif func._schema.name == "aten::equal" and args[0].shape == args[1].shape:
            # What a trace reads of it: whether any element differs (aten_record's ``_equal``).
            self.events.append(DataEvent("read", _site(), "read", int(not out)))
        elif torch.Tag.dynamic_output_shape in func.tags or func.namespace not in _TORCH_NAMESPACES:
            # A registered custom op's fake implementation may size its results by the data
            # (ctx.new_dynamic_size()) without the tag: its results' shapes are recorded too.
            shapes = [(list(t.shape), list(t.stride())) for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
            self.events.append(DataEvent("shape", _site(), func._schema.name, shapes))
        return out


class _RecordingLists(TorchFunctionMode):
    """``.tolist()`` reads its values in C++ (no operator a dispatch mode sees): recorded at torch's Python API."""

    def __init__(self, events: list[DataEvent]):
        super().__init__()
        self.events = events

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.Tensor.tolist:
            self.events.append(DataEvent("list", _site(), "list", [int(v) for v in pytree.tree_leaves(out)]))
        return out


def _copy(value):
    if isinstance(value, torch.Tensor):
        with torch.no_grad():
            # Of its layout, unless its elements overlap (an expanded gradient): a written copy cannot be that.
            copy = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=value.device) \
                if is_non_overlapping_and_dense(list(value.shape), list(value.stride())) else \
                torch.empty(value.shape, dtype=value.dtype, device=value.device)
            copy.copy_(value)
        return copy.requires_grad_(value.requires_grad) if value.is_leaf and value.requires_grad else copy
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    return value


def _alias(value):
    """``value`` as a new tensor object over the same memory (a leaf needing a gradient where it needs one), one
    per argument even where a tensor is passed twice, as the trace's stand-ins are: code that caches by a tensor's
    identity (a library's ``tensor_cache``) misses for it as it misses for them, so that this run reads what the
    trace reads, whatever earlier calls left in such caches."""
    if isinstance(value, torch.Tensor):
        alias = value.detach()
        return alias.requires_grad_() if value.requires_grad else alias
    if isinstance(value, (list, tuple)):
        return type(value)(_alias(v) for v in value)
    return value


def learn_data_values(values: tuple, written: list[int], run: Callable[[tuple], object],
                      enter: Callable[[Callable[[], None]], object] = lambda f: f()) -> DataValues:
    """Runs ``run`` (the body, its kernels launched by their own launchers) on ``values``, with copies of the
    arguments ``written`` (by index), and records the data it reads. ``enter(f)`` calls ``f`` in the state the
    body runs in (the caller's dispatch keys); the recording starts inside it."""
    if any(t.device.type == "meta" for t in pytree.tree_leaves(values) if isinstance(t, torch.Tensor)):
        raise TraceError("meta tensors have no data to read")
    events: list[DataEvent] = []
    arguments = tuple(_copy(v) if i in written else _alias(v) for i, v in enumerate(values))

    def recorded() -> None:
        with _RecordingLists(events), _Recording(events):
            run(arguments)

    enter(recorded)
    return DataValues(events)


class DataReads:
    """One trace's reads of data: Read steps, the slots whose sizes are data, and the codes that depend on them."""

    def __init__(self, tracer, values: Optional[DataValues]):
        self.tracer = tracer
        self.values = values
        self.names: list[str] = []  # per value read, for messages: "mask.item()"
        self.hints: list[int] = []  # per value read, the traced call's value
        self.bools: set[int] = set()  # values read from a bool tensor
        self.shaped: dict[int, tuple[list[int], list[int]]] = {}  # slot whose sizes are data -> its sizes, strides

    def _event(self, kind: str, name: str, what: str) -> DataEvent:
        if self.values is None:
            raise NeedsDataValues(f"{self.tracer.op.qualname}: {what} reads the tensors' data")
        event = self.values.take(kind, name)
        if event is None:
            raise self.tracer.error(f"{what} reads the tensors' data where the run that learned its values did "
                                    "not (the body reads different data each run)")
        return event

    def read(self, slot: int, dtype: torch.dtype, name: str, what: str) -> SymbolicInt:
        """A Read step of ``slot``'s one element; the value as a symbolic int over it."""
        (value,) = self._read(slot, dtype, [name], [self._event("read", "read", what).value], what)
        return value

    def tolist(self, proxy, what: str):
        """``proxy.tolist()``: one Read step of all its elements (its sizes guarded), as nested lists of
        symbolic ints."""
        sizes = [int(s) for s in proxy.size()]
        values = self._event("list", "list", what).value if math.prod(sizes) else []
        if len(values) != math.prod(sizes):
            raise self.tracer.error(f"{what} read {len(values)} values in the run that learned them, and the "
                                    f"tensor has {math.prod(sizes)} here")
        names = [f"{proxy._name}.tolist()[{i}]" for i in range(len(values))]
        flat = self._read(proxy._slot, proxy.dtype, names, values, what) if values else []

        def nest(d: int, start: int):
            if d == len(sizes):
                return flat[start]
            step = math.prod(sizes[d + 1:])
            return [nest(d + 1, start + i * step) for i in range(sizes[d])]

        return nest(0, 0)

    def _read(self, slot: int, dtype: torch.dtype, names: list[str], values: list[int], what: str) -> list:
        if dtype.is_floating_point or dtype.is_complex:
            raise self.tracer.error(f"{what} reads a {dtype} value from the tensors' data; a launch plan reads "
                                    "integers and bools only")
        first = self.tracer.add_read(slot, len(values))
        is_bool = dtype == torch.bool
        out = []
        for i, (name, value) in enumerate(zip(names, values)):
            self.names.append(name)
            self.hints.append(int(value))
            if is_bool:
                self.bools.add(first + i)
            out.append(SymbolicInt((Op.READ, first + i), name, int(value), self.tracer, is_bool=is_bool))
        return out

    def shaped_results(self, operator: str, count: int, what: str) -> list[tuple[list[int], list[int]]]:
        """The sizes and strides of the ``count`` tensors a call of ``operator`` made in the run that learned
        them."""
        shapes = self._event("shape", operator, what).value
        if len(shapes) != count:
            raise self.tracer.error(f"{what} made {len(shapes)} tensors in the run that learned its values and "
                                    f"{count} here")
        return shapes

    def is_bool(self, code: tuple) -> bool:
        return len(code) == 2 and Op(code[0]) == Op.READ and code[1] in self.bools

    def depends_on_data(self, code) -> bool:
        """Whether an expression reads a value of the data or a size the data decides."""
        found = []

        def visit(atom: tuple):
            op = Op(atom[0])
            if op == Op.READ or (op in (Op.SIZE, Op.STRIDE, Op.NUMEL) and atom[1] in self.shaped):
                found.append(atom)
            return None

        substitute(code, visit)
        return bool(found)
