"""Records what an op body does to tensors with torch itself: views, copies,
arithmetic, ``torch.*`` functions.

The call runs on the stand-ins' shadows (FakeTensors with symbolic sizes, see
``_symbolic_shapes``) under a dispatch mode that sees each ATen operator
after torch's own decompositions (``x.contiguous()`` on a contiguous tensor is
no operator at all, only the guards that proved it contiguous). Each operator
becomes a plan step:

* a view (its schema's result aliases an argument): a ``ViewStep``, sizes,
  strides and offset as plan expressions, evaluated natively with no ATen call;
* anything else: an ``AtenStep``, replayed from C++ through the dispatcher with
  the same arguments (tensors by slot, ints as expressions, float arguments by
  index).

Operators that read the tensors' data on the host (``.item()``) and results
whose sizes the data decides (``nonzero``, boolean masks) are Read steps and
results with size atoms of their own (trace/data_reads.py).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from typing import Any

import torch
from torch._decomp import decomposition_table
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException, FakeTensor, \
    unset_fake_temporarily
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .. import _C, _plan
from .expr import Op, SymbolicInt, encode_int
from .._launch_mode import SkipLaunches, launch_mode
from .data_reads import READ_OPERATORS
from .stand_ins import SymbolicFloat, TensorMeta, TensorProxy, dense_strides, layout_order
from .symbolic_shapes import SymbolicShapes, Untranslatable, is_unbacked, optional_hint
from .state import body_location

A = _plan.AtenArgKind

# torch's error where a C++ kernel reads a symbolic size as a number (c10::TensorImpl::throw_cannot_call_with_symbolic).
_SYMBOLIC_SIZES_REFUSED = re.compile(r"Cannot call \w+\(\) on tensor with symbolic sizes/strides")

# Operators that change a tensor's metadata in place: a plan's slots keep theirs.
_METADATA_MUTATIONS = ("resize_", "resize_as_", "as_strided_", "set_", "squeeze_", "unsqueeze_", "transpose_", "t_",
                       "swapdims_", "swapaxes_", "detach_")


def _probe_float(index: int) -> float:
    """A float no body computes, standing for float argument ``index`` inside
    ATen calls, so that the recorder can tell it from constants."""
    return 1.0 + (index + 1) * 2.0**-40 + 2.0**-51


class _QuietMetaFailures(logging.Filter):
    """FakeTensorMode logs a kernel's failure with its traceback before raising it; in a trace the error is
    reported (or worked around) by the tracer, so this thread's are not logged while it records a call."""

    local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self.local, "quiet", False)


logging.getLogger("torch._subclasses.fake_tensor").addFilter(_QuietMetaFailures())


@contextlib.contextmanager
def _quiet_meta_failures():
    previous = getattr(_QuietMetaFailures.local, "quiet", False)
    _QuietMetaFailures.local.quiet = True
    try:
        yield
    finally:
        _QuietMetaFailures.local.quiet = previous


class _ThroughDecompositions(TorchDispatchMode):
    """The operators a decomposition calls, each through its own decomposition where its kernel takes no symbolic
    sizes (``aten::pad`` calls ``constant_pad_nd``)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            return func(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException):
            raise
        except Exception:
            decomposition = decomposition_table.get(func)
            if decomposition is None:
                raise
            return decomposition(*args, **kwargs)


class _Recorder(TorchDispatchMode):
    def __init__(self, owner: "AtenRecorder"):
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace == "prim":  # prim.device and the like: metadata
            return func(*args, **kwargs)
        return self.owner.record(func, args, kwargs)


def _with_unknown_sizes_large(strides) -> list[int]:
    """A fake result's strides (torch's layout for its operator, over sizes the data decides) with every symbolic
    size taken large: which dimension is inner where a run's sizes of one element leave it open."""
    values = []
    for s in strides:
        expr = s.node.expr if isinstance(s, torch.SymInt) else s
        values.append(int(expr.subs({symbol: 1 << 20 for symbol in expr.free_symbols})) if hasattr(expr, "subs")
                      else int(expr))
    return values


class AtenRecorder:
    """The ATen half of one trace (the tracer owns one)."""

    def __init__(self, tracer):
        self.tracer = tracer
        self.shapes = SymbolicShapes(tracer)
        self._proxy_of: dict[int, TensorProxy] = {}  # id(shadow) -> stand-in
        self._shadow_of: dict[int, Any] = {}  # id(stand-in) -> shadow
        self._keep: list = []  # shadows stay alive while their ids are keys
        self._float_of_probe: dict[float, int] = {}
        self._layouts: list[tuple[int, str, list]] = []  # data-shaped results whose layout a Check step confirms

    # -- stand-ins <-> shadows ------------------------------------------------------------------
    def shadow(self, proxy: TensorProxy):
        fake = self._shadow_of.get(id(proxy))
        if fake is None:
            sizes, strides = self.tracer.shadow_dims(proxy)
            fake = self.shapes.fake_tensor(sizes, strides, proxy._meta.dtype, proxy.device)
            self._bind(proxy, fake)
        return fake

    def _bind(self, proxy: TensorProxy, fake) -> None:
        self._shadow_of[id(proxy)] = fake
        self._proxy_of[id(fake)] = proxy
        self._keep += [proxy, fake]

    def _to_shadow(self, value):
        if isinstance(value, slice):  # x[a:b] with symbolic bounds: a view whose sizes and offset stay symbolic
            return slice(*(self._to_shadow(v) for v in (value.start, value.stop, value.step)))
        if isinstance(value, TensorProxy):
            return self.shadow(value)
        if isinstance(value, SymbolicInt):
            return self.shapes.symint(value)
        if isinstance(value, SymbolicFloat):
            probe = _probe_float(value.arg)
            self._float_of_probe[probe] = value.arg
            return probe
        return value

    def _from_shadow(self, value, what: str):
        if isinstance(value, torch.Tensor):
            # An in-place operator on a tensor the plan holds returns that tensor itself: its stand-in.
            proxy = self._proxy_of.get(id(value))
            if proxy is None:
                proxy = self.tracer.held(value)
            if proxy is None:
                raise self.tracer.error(f"{what} made a tensor the launch plan did not record")
            return proxy
        if isinstance(value, torch.SymInt):
            result = self.shapes.symbolic_int(value, what)
            if isinstance(result, SymbolicInt) and self.tracer.data.is_bool(result.code):
                result.is_bool = True  # a bool tensor's .item()
            return result
        if isinstance(value, torch.SymBool):
            result = bool(value)  # guarded by ShapeEnv
            self.shapes.take_guards()
            return result
        if isinstance(value, float) and value in self._float_of_probe:
            return self.tracer.stand_ins[self._float_of_probe[value]]
        return value

    # -- one torch call of the body ---------------------------------------------------------------
    def call(self, func, args: tuple, kwargs: dict, what: str):
        shadow_args, shadow_kwargs = pytree.tree_map(self._to_shadow, (args, kwargs))
        try:
            try:
                out = self._on_shadows(func, shadow_args, shadow_kwargs)
            except RuntimeError as e:
                if not _SYMBOLIC_SIZES_REFUSED.search(str(e)):
                    raise
                # A composite operator's C++ kernel asked a symbolic size for a number (torch 2.11's
                # at::native::matmul, under F.linear of a 3-d view): the operator is recorded whole, as the
                # recorder meets it below autograd, where no composite kernel runs before it (the views the kernel
                # made before it failed stay in the plan, unused: metadata only).
                with torch._C._AutoDispatchBelowADInplaceOrView():
                    out = self._on_shadows(func, shadow_args, shadow_kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException) as e:
            raise self.tracer.error(f"{what} depends on the tensors' data ({type(e).__name__}: {e}); a launch plan "
                                    "holds only what sizes decide: compute it in a kernel, or outside the op") \
                from None
        self.shapes.take_guards()
        return pytree.tree_map(lambda v: self._from_shadow(v, what), out)

    def _on_shadows(self, func, args: tuple, kwargs: dict):
        # On shadows, for their shapes: an op that launches Triton kernels itself (a torch.library.triton_op)
        # is one ATen step, whose launches are its own at run time; here they are skipped.
        with torch._C.DisableTorchFunction(), self.shapes.mode, _Recorder(self), launch_mode(SkipLaunches()):
            return func(*args, **kwargs)

    # -- one ATen operator --------------------------------------------------------------------------
    def record(self, func, args: tuple, kwargs: dict):
        short_name = func._schema.name.split("::")[-1]
        name = f"{func.namespace}::{short_name}"
        what = f"`{func}`"
        if short_name in ("lift_fresh", "lift_fresh_copy"):
            # A Python number made a tensor (`x[:, -1] = 0`): a real tensor here (a fake one keeps it as `constant`).
            constant = getattr(args[0], "constant", None) if isinstance(args[0], FakeTensor) else args[0]
            if constant is not None and constant.dim() == 0:
                with unset_fake_temporarily():
                    value = constant.item()
                return self.shadow(self.tracer.host_tensors.scalar_tensor(value, constant.dtype))
            raise self.tracer.error("`torch.tensor(...)` of host values makes a tensor whose data a launch plan "
                                    "cannot hold: compute with Python ints (e.g. math.prod), or pass the tensor "
                                    "as an argument")
        # A real tensor among an operator's arguments is one the body neither received nor made (module or library
        # state): a tensor the plan holds (reading its metadata alone dispatches no operator and holds nothing).
        args, kwargs = pytree.tree_map_only(
            torch.Tensor, lambda v: v if isinstance(v, FakeTensor) else self.shadow(self.tracer.constant(v, what)),
            (args, kwargs))
        if short_name in READ_OPERATORS:
            return self._read(args[0], what)
        if name == "aten::equal":
            return self._equal(args, what)
        if short_name in _METADATA_MUTATIONS:
            raise self.tracer.error(f"{what} changes a tensor's sizes or strides in place, which a launch plan "
                                    "cannot follow: use the out-of-place form")
        host_values = [str(r.type) != "Tensor" and "Tensor" not in str(r.type) for r in func._schema.returns]
        data_read = f"{what} returns a value read from the tensors' data (it depends on the tensors' data: a " \
                    "launch plan holds only what sizes decide; compute it in a kernel, or outside the op)"
        if host_values and all(host_values):
            # A value of the metadata (torch.promote_types, result_type, is_same_size): the shadows answer it, and
            # raise for a value of the data (torch.equal, allclose).
            try:
                out = func(*args, **kwargs)
            except DataDependentOutputException:
                raise self.tracer.error(data_read) from None
            self.shapes.take_guards()
            return out
        if any(host_values):
            raise self.tracer.error(data_read)
        try:
            with _quiet_meta_failures():
                out = func(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException):
            raise
        except Exception as e:  # torch's own error for these arguments (a bad view, a dtype mismatch)
            out = self._decomposed(func, args, kwargs, self.tracer.error(f"{what}: {type(e).__name__}: {e}"))
        self.shapes.take_guards()
        if any(isinstance(r, torch.Tensor) and any(is_unbacked(s) for s in r.shape) for r in pytree.tree_leaves(out)):
            out = self._data_shaped(name, out, what)
        results = [r for r in pytree.tree_leaves(out) if isinstance(r, torch.Tensor)]
        for r in pytree.tree_leaves(out):
            if is_unbacked(r):
                raise self.tracer.error(f"{what} returns a number read from the tensors' data, which a launch "
                                        "plan cannot hold")
        schema = func._schema
        written = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
        # A view by what it is, not by its schema's "may alias" (contiguous(), reshape()).
        storages = {a.untyped_storage()._cdata for a in pytree.tree_leaves((args, kwargs))
                    if isinstance(a, torch.Tensor)}
        views = [r for r in results if r.untyped_storage()._cdata in storages]
        if views and not written:
            if len(views) != len(results):
                raise self.tracer.error(f"{what} returns views and new tensors together, which a launch plan "
                                        "cannot replay")
            for r in results:
                self._record_view(func, args, kwargs, r)
            return out
        values = self._schema_values(func, args, kwargs)
        arguments = [self._argument(a, v, f"argument '{a.name}' of {what}") for a, v in zip(schema.arguments, values)]
        written_slots = [self._slot_of(v, what) for a, v in zip(schema.arguments, values)
                         if a in written and v is not None]  # an optional written argument may be None
        if written and views:
            # An in-place or out= operator: what it returns is the written arguments themselves; it keeps none.
            if len(views) != len(results):
                raise self.tracer.error(f"{what} returns views and new tensors together, which a launch plan "
                                        "cannot replay")
            self.tracer.add_aten_step(_plan.AtenStep(name, schema.overload_name, arguments, 0,
                                                     body_location(*self.tracer.op.sources)), [],
                                      written_slots=written_slots)
            return out
        # New tensors, made beside any writes (a library's op that fills the `out` it is given and returns its
        # statistics).
        on_host = [self._check_result(r, what) for r in results]
        metas = [self._proxy_dims(r, what) for r in results]
        proxies = self.tracer.add_aten_step(
            _plan.AtenStep(name, schema.overload_name, arguments, len(results), body_location(*self.tracer.op.sources)),
            metas, written_slots=written_slots)
        self.tracer.made_on_host([p for p, host in zip(proxies, on_host) if host])
        for r, p in zip(results, proxies):
            self._bind(p, r)
        self._check_layouts()
        return out

    def _read(self, fake, what: str):
        """``.item()`` and the like: a Read step; to torch, a SymInt whose symbol is the read value."""
        proxy = self._proxy_of.get(id(fake))
        if proxy is None:
            raise self.tracer.error(f"{what} reads a tensor the launch plan did not record")
        if fake.numel() != 1:  # a guard (or a check, for a size the data decides)
            raise self.tracer.error(f"{what}: a tensor with {fake.numel()} elements cannot be converted to a "
                                    "number")
        self.shapes.take_guards()
        value = self.tracer.data.read(proxy._slot, fake.dtype, f"{proxy._name}.item()", what)
        return self.shapes.symint(value)

    def _equal(self, args: tuple, what: str):
        """``torch.equal(a, b)``: sizes compared (guards), then whether any element differs, read from the data
        (``aten::ne``, ``aten::any``, a Read step): a bool over the value read."""
        a, b = args
        same_sizes = a.dim() == b.dim() and all(x == y for x, y in zip(a.shape, b.shape))
        self.shapes.take_guards()
        if not same_sizes:
            return False
        differs = self.record(torch.ops.aten.ne.Tensor, (a, b), {})
        found = self.record(torch.ops.aten.any.default, (differs,), {})
        return self._read(found, what) == 0

    def _data_shaped(self, operator: str, out, what: str):
        """``out`` with each tensor whose sizes the data decides (ShapeEnv's unbacked sizes) replaced by one
        whose sizes are atoms of the slot it will take (``SIZE slot d``, with the traced call's values) where the
        data decides them, and the strides the operator made on this device in the run that learned them (dense
        in that order over those sizes: nonzero's rows are column-major); a Check step after
        the operator confirms that layout on every call (``_check_layouts``)."""
        first = self.tracer.next_slot()
        results = [r for r in pytree.tree_leaves(out) if isinstance(r, torch.Tensor)]
        made = {}
        learned = self.tracer.data.shaped_results(operator, len(results), what)
        for i, (r, (sizes, strides)) in enumerate(zip(results, learned)):
            slot = first + i
            if len(sizes) != r.dim():
                raise self.tracer.error(f"{what}: result {i} has rank {r.dim()} here and {len(sizes)} in the run "
                                        "that learned its sizes")
            order = layout_order(strides, ties=_with_unknown_sizes_large(r.stride()))
            self.tracer.data.shaped[slot] = (sizes, list(dense_strides(sizes, order)))
            name = f"{operator.split('::')[-1]}{slot}"
            dims = [SymbolicInt((int(Op.SIZE), slot, d), f"{name}.size({d})", v, self.tracer) if is_unbacked(s)
                    else self.shapes.symbolic_int(s, f"{what}.size({d})")
                    for d, (s, v) in enumerate(zip(r.shape, sizes))]
            dense = list(dense_strides(dims, order))
            made[id(r)] = self.shapes.fake_tensor(dims, dense, r.dtype, r.device)
            self._layouts.append((slot, name, dense))
        return pytree.tree_map(lambda v: made.get(id(v), v) if isinstance(v, torch.Tensor) else v, out)

    def _check_layouts(self) -> None:
        """After the operator that made them: a Check step per data-shaped result that its strides are the traced
        call's where they matter (a dimension of more than one element, in a tensor with any); a call whose result
        is laid out otherwise leaves the plan (its later views assume that layout)."""
        for slot, name, dense in (layout for layout in self._layouts if layout[2]):  # a 0-d tensor: no layout
            code, texts = [int(Op.NUMEL), slot, int(Op.CONST), 0, int(Op.EQ)], []  # no element: any layout
            for d, stride in enumerate(dense):
                expected, text = encode_int(stride, self.tracer)
                code += [int(Op.SIZE), slot, d, int(Op.CONST), 1, int(Op.LE),
                         int(Op.STRIDE), slot, d, *expected, int(Op.EQ), int(Op.BITOR)]
                if d:
                    code.append(int(Op.BITAND))
                texts.append(f"{name}.stride({d}) == {text}")
            code.append(int(Op.BITOR))
            self.tracer.add_guard(tuple(code), f"{name} laid out as traced ({', '.join(texts)}, where it has "
                                               "elements and that dimension more than one)")
        self._layouts.clear()

    @staticmethod
    def _decomposed(func, args: tuple, kwargs: dict, failure: Exception):
        """The result of an operator whose kernel takes no symbolic sizes (``constant_pad_nd`` given a padding
        computed from sizes): torch's Python decomposition gives its sizes, where it lays the result out as the
        operator does at the call's sizes (the step runs the operator). Else ``failure``, torch's error."""
        decomposition = decomposition_table.get(func)
        if decomposition is None and func.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd):
            decomposition = func.decompose
        if decomposition is None:
            raise failure

        def at_hints(value):
            if isinstance(value, torch.Tensor):
                return torch.empty_strided([optional_hint(s) for s in value.shape],
                                           [optional_hint(s) for s in value.stride()],
                                           dtype=value.dtype, device=value.device)
            return optional_hint(value) if isinstance(value, torch.SymInt) else value

        try:
            with _quiet_meta_failures(), _ThroughDecompositions():
                out = decomposition(*args, **kwargs)
            expected = func(*pytree.tree_map(at_hints, args), **pytree.tree_map(at_hints, kwargs))
        except Exception:  # noqa: BLE001 - torch's error for the operator is the one to report
            raise failure from None
        got, want = pytree.tree_leaves(out), pytree.tree_leaves(expected)
        if len(got) != len(want) or any(
                not isinstance(g, torch.Tensor) or g.dtype != w.dtype
                or [optional_hint(s) for s in g.shape] != list(w.shape)
                or [optional_hint(s) for s in g.stride()] != list(w.stride()) for g, w in zip(got, want)):
            raise failure
        return out

    def _check_result(self, r: torch.Tensor, what: str) -> bool:
        """Whether ``r`` is a tensor on the host in a trace for another device (a step on the CPU)."""
        device = self.tracer.device
        on_host = r.device.type == "cpu" and device.type != "cpu"
        if r.device != device and not on_host and not (r.device.type == device.type and r.dim() == 0):
            raise self.tracer.error(f"{what} makes a tensor on {r.device}; the op's tensors are on {device}")
        self.tracer.check_dtype(r.dtype, f"{what}'s result")
        return on_host

    def _proxy_dims(self, r: torch.Tensor, what: str):
        sizes = [self.shapes.symbolic_int(s, f"{what}.size({d})") for d, s in enumerate(r.shape)]
        strides = [self.shapes.symbolic_int(s, f"{what}.stride({d})") for d, s in enumerate(r.stride())]
        hints = TensorMeta([int(getattr(s, "value", s)) for s in sizes], [int(getattr(s, "value", s))
                                                                         for s in strides], r.dtype)
        return hints, sizes, strides

    def _record_view(self, func, args, kwargs, r: torch.Tensor) -> None:
        what = f"`{func}`"
        base_fake = next((a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)
                          and a.untyped_storage()._cdata == r.untyped_storage()._cdata), None)
        if base_fake is None:
            raise self.tracer.error(f"{what} returned a view of no argument")
        base = self._proxy_of[id(base_fake)]
        hints, sizes, strides = self._proxy_dims(r, what)
        # In the view's elements, from the base's first (a view of another width, as a complex tensor's real
        # view, counts its own: the executor reinterprets the base as its type first).
        base_offset = base_fake.storage_offset()
        if r.dtype.itemsize != base_fake.dtype.itemsize:
            base_offset = base_offset * base_fake.dtype.itemsize // r.dtype.itemsize
        offset = self.shapes.symbolic_int(r.storage_offset() - base_offset, f"{what}.offset")
        proxy = self.tracer.add_view(base, hints, sizes, strides, offset,
                                     f"{func.namespace}::{func._schema.name.split('::')[-1]}")
        self._bind(proxy, r)

    def _slot_of(self, fake, what: str) -> int:
        proxy = self._proxy_of.get(id(fake))
        if proxy is None:
            raise self.tracer.error(f"{what} reads a tensor that is neither an argument of the op nor made in its "
                                    "body (a tensor captured from outside cannot be part of a launch plan)")
        return proxy._slot

    def _int(self, value, what: str) -> _plan.Expr:
        if isinstance(value, torch.SymInt):
            try:
                return _plan.Expr(list(self.shapes.to_code(value.node.expr)), self.shapes.text(value.node.expr))
            except Untranslatable as e:
                raise self.tracer.error(f"{what}: {e}") from None
        return _plan.expr(encode_int(int(value), self.tracer))

    def _number(self, kind, value, what: str) -> _plan.AtenArg:
        if isinstance(value, (int, torch.SymInt)):  # bools too
            if kind == A.FLOAT:
                return _plan.AtenArg(A.FLOAT, number=float(value))
            return _plan.AtenArg(kind, ints=[self._int(value, what)])
        if isinstance(value, float):
            if value in self._float_of_probe:
                return _plan.AtenArg(kind, slots=[self._float_of_probe[value]])
            return _plan.AtenArg(kind, number=value)
        raise self.tracer.error(f"{what}: a {type(value).__name__} where a number is expected")

    @staticmethod
    def _schema_values(func, args: tuple, kwargs: dict) -> list:
        """One value per schema argument, in order (keyword ones by name, defaults filled in)."""
        values = []
        for i, a in enumerate(func._schema.arguments):
            if a.kwarg_only or i >= len(args):
                values.append(kwargs[a.name] if a.name in kwargs else a.default_value if a.has_default_value()
                              else None)
            else:
                values.append(args[i])
        return values

    def _argument(self, schema_arg, value, what: str) -> _plan.AtenArg:
        t = str(schema_arg.real_type)
        t = t[len("Optional["):-1] if t.startswith("Optional[") else t
        if value is None:
            return _plan.AtenArg(A.NONE)
        if t == "Tensor":
            if isinstance(value, torch.Tensor):
                return _plan.AtenArg(A.TENSOR, slots=[self._slot_of(value, what)])
            return self._number(A.WRAPPED_SCALAR, value, what)
        if t == "List[Tensor]":
            return _plan.AtenArg(A.TENSOR_LIST, slots=[self._slot_of(v, what) for v in value])
        if t == "List[Optional[Tensor]]":
            return _plan.AtenArg(A.OPTIONAL_TENSOR_LIST, slots=[-1 if v is None else self._slot_of(v, what)
                                                                 for v in value])
        if t in ("int", "SymInt"):
            return _plan.AtenArg(A.INT, ints=[self._int(value, what)])
        if t.startswith("List[bool]"):  # bool[3]: its items as ints (a bool guarded where it is symbolic)
            return _plan.AtenArg(A.BOOL_LIST, ints=[self._int(int(v), what) for v in value])
        if t in ("List[int]", "List[SymInt]"):
            values = [value] if isinstance(value, (int, torch.SymInt)) else value
            return _plan.AtenArg(A.INT_LIST, ints=[self._int(v, what) for v in values])
        if t in ("ScalarType", "Layout", "MemoryFormat"):
            code = value if isinstance(value, int) else _C.enum_code(value)  # schema defaults are codes already
            return _plan.AtenArg(A.INT, ints=[self._int(code, what)])
        if t == "float":
            return self._number(A.FLOAT, value, what)
        if t == "bool":
            return _plan.AtenArg(A.BOOL, number=float(bool(value)))
        if t == "str":
            return _plan.AtenArg(A.STRING, text=value)
        if t == "Device":
            if torch.device(value).type == self.tracer.device.type:
                return _plan.AtenArg(A.DEVICE)
            if torch.device(value).type == "cpu":  # the host, where a body builds small index tensors
                return _plan.AtenArg(A.DEVICE, text="cpu")
            raise self.tracer.error(f"{what} is {value}; the op's tensors are on {self.tracer.device}")
        if t in ("Scalar", "number"):
            return self._number(A.SCALAR, value, what)
        raise self.tracer.error(f"{what} has type {schema_arg.real_type}, which a launch plan cannot replay")
