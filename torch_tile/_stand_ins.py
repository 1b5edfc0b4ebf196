"""What an op body's arguments are while it is traced: tensors become
``TensorProxy`` (metadata only), ints and bools ``SymbolicInt`` (see _expr.py),
floats ``SymbolicFloat``. Each asks the active tracer (``_trace_state``) to
record what the body does with it."""

from __future__ import annotations

from typing import Any, Optional

import torch

from ._errors import TraceError
from ._expr import Op, SymbolicInt
from ._trace_state import current_tracer


class SymbolicFloat:
    """A float argument: passed to kernels as is; no arithmetic in the plan."""

    __slots__ = ("arg", "name", "value", "tracer")

    def __init__(self, arg: int, name: str, value: float, tracer: Any):
        self.arg, self.name, self.value, self.tracer = arg, name, value, tracer

    def _refuse(self, *_args, **_kwargs):
        raise self.tracer.error(
            f"float argument '{self.name}' is used in host arithmetic or converted; a launch plan can only "
            "pass float arguments to kernels unchanged (do the arithmetic inside the kernel)"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __pow__ = __neg__ = _refuse
    __float__ = __int__ = __bool__ = __lt__ = __gt__ = __le__ = __ge__ = _refuse
    __eq__ = __ne__ = _refuse
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SymbolicFloat({self.name} = {self.value})"


def concrete(value: Any) -> Any:
    """The Python value behind a scalar stand-in, read without a guard (bool
    arguments stay bools, so Triton specialises them as it would for the
    caller); anything else unchanged."""
    if isinstance(value, SymbolicInt):
        return bool(value.value) if value.is_bool else value.value
    if isinstance(value, SymbolicFloat):
        return value.value
    return value


def contiguous_strides(sizes) -> tuple[int, ...]:
    strides, expected = [], 1
    for s in reversed(sizes):
        strides.append(expected)
        expected *= max(int(s), 1)
    return tuple(reversed(strides))


def is_non_overlapping_and_dense(sizes, strides) -> bool:
    """torch's rule (c10::TensorImpl::is_non_overlapping_and_dense), on plain tuples."""
    expected = 1
    for size, stride in sorted(zip(sizes, strides), key=lambda p: p[1]):
        if size == 1:
            continue
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


class TensorProxy:
    """Stands in for a tensor while tracing: metadata is symbolic, data is absent."""

    def __init__(self, tracer: Any, slot: int, name: str, meta: TensorMeta):
        self._tracer = tracer
        self._slot = slot
        self._name = name
        self._meta = meta

    # -- metadata ---------------------------------------------------------------------
    def _dim(self, dim: int) -> int:
        dim = int(dim)
        n = self._meta.dim()
        if not -n <= dim < n:
            raise self._tracer.error(f"dimension {dim} is out of range for '{self._name}' of rank {n}")
        return dim % n

    def size(self, dim: Optional[int] = None):
        if dim is None:
            return tuple(self.size(d) for d in range(self._meta.dim()))
        d = self._dim(dim)
        return SymbolicInt((Op.SIZE, self._slot, d), f"{self._name}.size({d})", self._meta.sizes[d], self._tracer)

    def stride(self, dim: Optional[int] = None):
        if dim is None:
            return tuple(self.stride(d) for d in range(self._meta.dim()))
        d = self._dim(dim)
        return SymbolicInt((Op.STRIDE, self._slot, d), f"{self._name}.stride({d})", self._meta.strides[d], self._tracer)

    @property
    def shape(self):
        return self.size()

    def numel(self):
        return SymbolicInt((Op.NUMEL, self._slot), f"{self._name}.numel()", self._meta.numel(), self._tracer)

    def dim(self) -> int:
        return self._meta.dim()  # constant: every plan guards the rank

    ndim = property(dim)

    @property
    def dtype(self) -> torch.dtype:
        return self._meta.dtype  # constant: every plan guards the dtype

    @property
    def device(self) -> torch.device:
        return self._tracer.device

    @property
    def is_cuda(self) -> bool:
        return self._tracer.device.type == "cuda"

    def element_size(self) -> int:
        return self._meta.dtype.itemsize

    def is_contiguous(self) -> bool:
        expected = 1
        for d in reversed(range(self._meta.dim())):
            size = self.size(d)
            if size != 1:
                if self.stride(d) != expected:
                    return False
                expected = size * expected
        return True

    def new_empty(self, *size, dtype=None, device=None, **kwargs):
        with torch._C.DisableTorchFunction():  # the tracer's own torch calls are not the body's
            return self._tracer.factory(torch.Tensor.new_empty, (self, *size), dict(kwargs, dtype=dtype, device=device))

    def new_zeros(self, *size, dtype=None, device=None, **kwargs):
        with torch._C.DisableTorchFunction():
            return self._tracer.factory(torch.Tensor.new_zeros, (self, *size), dict(kwargs, dtype=dtype, device=device))

    # -- what a plan cannot hold -----------------------------------------------------------
    def data_ptr(self):
        raise self._tracer.error(
            f"'{self._name}.data_ptr()' reads an address; pass the tensor itself to the kernel"
        )

    def __getattr__(self, attr: str):
        raise self._tracer.error(
            f"'{self._name}.{attr}' is not available in an op body: a launch plan holds sizes, strides, "
            "dtypes, allocations (empty/zeros[_like], new_empty/new_zeros) and kernel launches"
        )

    def _no_tensor_ops(self, *_args, **_kwargs):
        raise self._tracer.error(
            f"arithmetic or data access on tensor '{self._name}' cannot be part of a launch plan: "
            "do it inside a kernel, or outside the op"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _no_tensor_ops
    __getitem__ = __setitem__ = __bool__ = __float__ = __int__ = __index__ = __matmul__ = _no_tensor_ops
    __iter__ = _no_tensor_ops
    # Comparing tensors makes a tensor in torch; Python's default identity
    # comparison would make a bool, and the body would take a branch on it
    # silently (e.g. `target != ignore_index`).
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _no_tensor_ops
    __hash__ = object.__hash__

    def __len__(self) -> int:
        return int(self.size(0))

    def __repr__(self) -> str:
        return f"TensorProxy({self._name}: {self._meta.sizes}, {self._meta.dtype}, slot {self._slot})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        tracer = current_tracer()
        if tracer is None:
            raise TraceError("a torch_tile TensorProxy escaped its op body")
        return tracer.torch_function(func, args, kwargs or {})
