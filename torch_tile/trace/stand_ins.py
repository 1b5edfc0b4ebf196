"""What an op body's arguments are while it is traced: tensors become
``TensorProxy`` (metadata only), ints and bools ``SymbolicInt`` (see trace/expr.py),
floats ``SymbolicFloat``. Each asks the active tracer (``_trace_state``) to
record what the body does with it."""

from __future__ import annotations

import math
import struct
from typing import Any, Optional

import torch

from .._errors import TraceError
from .expr import Op, SymbolicInt, sym_max, torch_function_of_stand_ins
from .state import current_tracer


class SymbolicFloat:
    """A float argument: passed to kernels (and ATen steps) as is, read per
    call. Any other use (host arithmetic, a tl.constexpr, a comparison) reads
    its value and guards on it, as Dynamo does with a specialised float: the
    plan then holds for calls with that same value."""

    __slots__ = ("arg", "name", "value", "tracer", "__weakref__")

    def __init__(self, arg: int, name: str, value: float, tracer: Any):
        self.arg, self.name, self.value, self.tracer = arg, name, value, tracer
        tracer.track(self)

    def specialize(self) -> float:
        bits = struct.unpack("<q", struct.pack("<d", self.value))[0]
        self.tracer.add_guard((Op.FLOAT_BITS, self.arg, Op.CONST, bits, Op.EQ), f"{self.name} == {self.value!r}")
        return self.value

    def __float__(self) -> float:
        return self.specialize()

    # As text, the float it stands for: the value, guarded (as SymbolicInt's).
    def __repr__(self) -> str:
        return repr(self.specialize())

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self.specialize(), spec)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch_function_of_stand_ins(func, args, kwargs)  # as SymbolicInt's



def _specialized(name: str):
    def method(self, *args):
        return getattr(self.specialize(), name)(*(concrete_float(a) for a in args))
    method.__name__ = name
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__neg__", "__pos__",
              "__abs__", "__int__", "__bool__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__round__",
              "__trunc__", "__floor__", "__ceil__", "is_integer", "hex", "as_integer_ratio"):
    setattr(SymbolicFloat, _name, _specialized(_name))
SymbolicFloat.__hash__ = lambda self: hash(self.specialize())


def concrete_float(value: Any) -> Any:
    """A SymbolicFloat's value, guarded; anything else unchanged."""
    return value.specialize() if isinstance(value, SymbolicFloat) else value


# The alignment torch's allocators give every allocation (CUDA's caching allocator: 512 bytes; CPU: 64): what a
# plan assumes of the address of a tensor it makes.
ALLOCATION_ALIGNMENT = 64


class SymbolicAddress(SymbolicInt):
    """``x.data_ptr()``: the tensor's address, read per call, as a value (an element of a tensor of pointers, a
    kernel's integer argument), and good for alignment checks (``% n`` and ``& mask``, then a comparison, make an
    alignment guard). ``aligned_code``: what the guard reads, known before the plan makes anything: an
    argument's address plus the view's offset, or for a tensor the plan makes, its offset from an allocation
    whose address is a multiple of ``alignment`` (0 for an argument's address). An address plus or minus a
    number of bytes is one too (a library's pointer into a tensor: Triton takes an object with ``data_ptr()`` and
    ``dtype`` as a pointer): ``tensor`` is the tensor it points into, ``displacement`` the bytes past its
    address."""

    __slots__ = ("alignment", "aligned_code", "tensor", "displacement")

    def __init__(self, code, text: str, value: int, sink, aligned_code, alignment: int = 0,
                 tensor: Optional["TensorProxy"] = None, displacement: Any = 0):
        super().__init__(code, text, value, sink)
        self.aligned_code = aligned_code
        self.alignment = alignment
        self.tensor = tensor
        self.displacement = displacement

    def _displaced(self, delta, symbol: str):
        if isinstance(delta, SymbolicAddress) or not isinstance(delta, int):
            return self._refuse()  # the distance of two addresses, or a scaled one, is not an address
        signed = delta if symbol == "+" else -delta
        value = SymbolicInt(self.code, self.text, self.value, self.sink) + signed
        aligned = SymbolicInt(self.aligned_code, self.text, self.value, self.sink) + signed
        return SymbolicAddress(value.code, f"({self.text} {symbol} {getattr(delta, 'text', delta)})", value.value,
                               self.sink, aligned.code, self.alignment, self.tensor, self.displacement + signed)

    def __add__(self, delta):
        return self._displaced(delta, "+")

    __radd__ = __add__

    def __sub__(self, delta):
        return self._displaced(delta, "-")

    def _refuse(self, *_args, **_kwargs):
        raise self.sink.error(f"`{self.text}` is an address: a launch plan takes it as a value or checks its "
                              "alignment (`% 16 == 0`, `& 15 == 0`), no other arithmetic; pass the tensor itself "
                              "(or a view of it) to kernels")

    def _within_alignment(self, modulus) -> None:
        if self.alignment and not (isinstance(modulus, int) and 0 < modulus and self.alignment % modulus == 0):
            raise self.sink.error(f"`{self.text} % {modulus}`: a tensor the op makes is known to be aligned to "
                                  f"{self.alignment} bytes, not more")

    def __mod__(self, o):
        self._within_alignment(o)
        return SymbolicInt(self.aligned_code, self.text, self.value, self.sink) % o

    def __and__(self, o):
        self._within_alignment(o + 1 if isinstance(o, int) else o)
        return SymbolicInt(self.aligned_code, self.text, self.value, self.sink) & o

    __rsub__ = __mul__ = __rmul__ = __floordiv__ = __rmod__ = _refuse
    __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __lshift__ = __rshift__ = __neg__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __bool__ = __index__ = __int__ = __float__ = _refuse
    __hash__ = None  # type: ignore[assignment]


def concrete(value: Any) -> Any:
    """The Python value behind a scalar stand-in, read without a guard (bool
    arguments stay bools, so Triton specialises them as it would for the
    caller); anything else unchanged."""
    if isinstance(value, SymbolicInt):
        return bool(value.value) if value.is_bool else value.value
    if isinstance(value, SymbolicFloat):
        return value.value
    return value


def contiguous_strides(sizes) -> tuple:
    """torch's contiguous strides of ``sizes`` (ints, or symbolic ints: then symbolic, with no guard)."""
    return dense_strides(sizes, reversed(range(len(sizes))))


def dense_strides(sizes, order) -> tuple:
    """The strides of a tensor of ``sizes`` whose elements are dense in ``order`` (its dimensions, innermost
    first), as torch computes contiguous ones (ints, or symbolic ints: then symbolic, with no guard)."""
    strides, expected = [0] * len(sizes), 1
    for d in order:
        strides[d] = expected
        expected = sym_max(sizes[d], 1) * expected
    return tuple(strides)


def layout_order(strides, ties=None) -> list[int]:
    """A tensor's dimensions innermost first, by its strides; on ties (dimensions of one element), by ``ties``
    (another tensor's strides of the same layout), then the later dimension inner, as in a contiguous tensor."""
    return sorted(range(len(strides)), key=lambda d: (strides[d], ties[d] if ties else 0, -d))


def is_contiguous(sizes, strides) -> bool:
    """torch's contiguity rule (c10's _compute_contiguous): a tensor with no
    element is contiguous, and size-1 dimensions' strides do not count. On
    symbolic ints each comparison is a guard (the element count is asked only
    of layouts the strides do not already make contiguous)."""
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides)):
        if size != 1:
            if stride != expected:
                return bool(math.prod(sizes) == 0)
            expected = size * expected
    return True


def is_non_overlapping_and_dense(sizes, strides) -> bool:
    """torch's rule (c10::TensorImpl::is_non_overlapping_and_dense: contiguous,
    or contiguous in some order of the dimensions longer than 1), on plain tuples."""
    if is_contiguous(sizes, strides):
        return True
    expected = 1
    for size, stride in sorted(((s, st) for s, st in zip(sizes, strides) if s >= 2), key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


class TensorMeta:
    """Concrete metadata of one tensor of the traced call (plain Python: no torch
    calls, which the tracer's TorchFunctionMode would intercept)."""

    __slots__ = ("sizes", "strides", "dtype")

    def __init__(self, sizes, strides, dtype: torch.dtype):
        self.sizes, self.strides, self.dtype = tuple(sizes), tuple(strides), dtype

    def dim(self) -> int:
        return len(self.sizes)

    def numel(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n


class TensorProxy(torch.Tensor):
    """Stands in for a tensor while tracing: metadata is symbolic, data is absent.

    It answers every metadata question as a tensor does; anything else a body
    does with it (views, ``.contiguous()``, arithmetic, ``torch.*`` functions)
    goes to the tracer (``__torch_function__``), which records it as a plan step
    (``_aten_record``). It is a real tensor, a wrapper of the call's layout on
    the meta device, so that C code that takes it at its word (an entry point
    that checks ``isinstance(x, torch.Tensor)`` and reads the object) reads a
    tensor with no data, never garbage: what such code does to it reaches
    ``__torch_dispatch__``, which refuses it by name."""

    @staticmethod
    def __new__(cls, tracer: Any, slot: int, name: str, meta: TensorMeta,
                sizes: Optional[list] = None, strides: Optional[list] = None):
        return torch.Tensor._make_wrapper_subclass(cls, meta.sizes, strides=meta.strides, dtype=meta.dtype,
                                                   device="meta")

    def __init__(self, tracer: Any, slot: int, name: str, meta: TensorMeta,
                 sizes: Optional[list] = None, strides: Optional[list] = None):
        self._tracer = tracer
        self._slot = slot
        self._name = name
        self._meta = meta
        tracer.track(self)
        # Symbolic sizes and strides of a tensor the body made (expressions
        # over the arguments); None: read the slot itself.
        self._sizes = sizes
        self._strides = strides

    # -- metadata ---------------------------------------------------------------------
    def _dim(self, dim: int) -> int:
        dim = int(dim)
        n = self._meta.dim()
        if not -n <= dim < n:
            raise self._tracer.error(f"dimension {dim} is out of range for '{self._name}' of rank {n}")
        return dim % n

    def size(self, dim: Optional[int] = None):
        if dim is None:
            return tuple(self.size(d) for d in range(self._meta.dim()))  # not torch.Size: it would read each as int
        d = self._dim(dim)
        if self._sizes is not None:
            return self._sizes[d]
        return SymbolicInt((Op.SIZE, self._slot, d), f"{self._name}.size({d})", self._meta.sizes[d], self._tracer)

    def stride(self, dim: Optional[int] = None):
        if dim is None:
            return tuple(self.stride(d) for d in range(self._meta.dim()))
        d = self._dim(dim)
        if self._strides is not None:
            return self._strides[d]
        return SymbolicInt((Op.STRIDE, self._slot, d), f"{self._name}.stride({d})", self._meta.strides[d], self._tracer)


    @property
    def shape(self):
        return self.size()

    def numel(self):
        if self._sizes is not None:
            n = 1
            for s in self._sizes:
                n = n * s
            return n
        return SymbolicInt((Op.NUMEL, self._slot), f"{self._name}.numel()", self._meta.numel(), self._tracer)

    nelement = numel

    def dim(self) -> int:
        return self._meta.dim()  # constant: every plan guards the rank

    ndim = property(dim)
    ndimension = dim

    @property
    def dtype(self) -> torch.dtype:
        return self._meta.dtype  # constant: every plan guards the dtype

    @property
    def device(self) -> torch.device:
        return self._tracer.device_of(self)

    def get_device(self) -> int:
        device = self.device
        return device.index if device.type == "cuda" and device.index is not None else -1

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self.device.type == "meta"

    layout = torch.strided
    is_sparse = False
    is_quantized = False
    is_nested = False
    is_mkldnn = False
    @property
    def requires_grad(self) -> bool:
        """False: the plan runs below autograd (a body that reads it for its Functions trains through Python)."""
        return self._tracer.functions.read_requires_grad(self)

    grad = None
    grad_fn = None
    is_leaf = True

    def element_size(self) -> int:
        return self._meta.dtype.itemsize

    itemsize = property(element_size)

    def is_floating_point(self) -> bool:
        return self._meta.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._meta.dtype.is_complex

    def is_signed(self) -> bool:
        return self._meta.dtype.is_signed

    def type(self, dtype=None, **kwargs):
        if dtype is None:
            return {"cuda": "torch.cuda."}.get(self.device.type, "torch.") + \
                str(self._meta.dtype).replace("torch.", "").capitalize() + "Tensor"
        return self._tracer.tensor_method("type", self, (dtype,), kwargs)

    def is_contiguous(self, memory_format=torch.contiguous_format) -> bool:
        if memory_format != torch.contiguous_format:
            return self._tracer.tensor_method("is_contiguous", self, (memory_format,), {})
        return is_contiguous(self.size(), self.stride())

    def data_ptr(self):
        """The address, for alignment checks only (``x.data_ptr() % 16 == 0``
        becomes an alignment guard, as Triton's own specialization is)."""
        return self._tracer.data_ptr(self)

    def __getattribute__(self, attr: str):
        # A tensor method not answered here goes to the tracer as it is called, before torch's argument parser,
        # which would refuse a symbolic int where a number goes (x.clamp_min(n)).
        if attr in _ROUTED_METHODS and attr not in _OWN_MEMBERS[type(self)]:
            return lambda *args, **kwargs: object.__getattribute__(self, "_tracer").tensor_method(
                attr, self, args, kwargs)
        return object.__getattribute__(self, attr)

    def __getattr__(self, attr: str):
        # Tensor methods and properties not answered above: recorded by the tracer.
        if attr.startswith("_") or not hasattr(torch.Tensor, attr):
            name = vars(self).get("_name", "a tensor")  # not self._name: asked before __init__ ran, it recurses
            raise AttributeError(f"'Tensor' object (the stand-in for '{name}') has no attribute '{attr}'")
        member = getattr(torch.Tensor, attr)
        if callable(member):
            return lambda *args, **kwargs: self._tracer.tensor_method(attr, self, args, kwargs)
        return self._tracer.tensor_property(attr, self)

    def __bool__(self):
        # A value read from the data (trace/data_reads.py); a float one as the comparison bool() makes of it.
        if self.numel() != 1:
            raise self._tracer.error(f"`bool({self._name})`: Boolean value of Tensor with more than one value is "
                                     "ambiguous (as torch says)")
        return bool((self if not self._meta.dtype.is_floating_point else self != 0).item())

    def __len__(self) -> int:
        return int(self.size(0))

    def __iter__(self):
        return iter([self[i] for i in range(len(self))])

    def __repr__(self) -> str:
        return f"TensorProxy({self._name}: {self._meta.sizes}, {self._meta.dtype}, slot {self._slot})"

    __hash__ = object.__hash__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch_function_of_stand_ins(func, args, kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # Reached only by code that bypasses torch's Python layer (C++ code handed a stand-in): what it does is
        # not seen by the tracer, so it cannot be a plan step.
        tracer = current_tracer()
        message = (f"`{func}` was called on a stand-in by code that torch_tile cannot see into (C++ code given "
                   "a tensor of the traced call), so it cannot be part of a launch plan")
        raise tracer.error(message) if tracer is not None else TraceError(message)


# Public tensor methods (what a body calls on a tensor), and what the stand-in classes answer themselves.
_ROUTED_METHODS = frozenset(name for name, member in vars(torch._C.TensorBase).items()
                            if not name.startswith("_") and callable(member))


class _OwnMembers(dict):
    def __missing__(self, cls):
        members = {name for c in cls.__mro__ if not issubclass(torch.Tensor, c) for name in vars(c)}
        self[cls] = frozenset(members)
        return self[cls]


_OWN_MEMBERS = _OwnMembers()


def _operator(name: str):
    def method(self, *args):
        return self._tracer.tensor_method(name, self, args, {})
    method.__name__ = name
    return method


# Python operators go to torch.Tensor's own (a comparison makes a tensor, as in torch).
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
              "__rmatmul__", "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__",
              "__rshift__", "__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__",
              "__gt__", "__ge__", "__getitem__", "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
              "__float__", "__int__", "__index__"):
    setattr(TensorProxy, _name, _operator(_name))
