"""Tensors an op body makes from host values: ``torch.tensor(data)`` / ``torch.as_tensor(data)`` of Python numbers
and stand-ins (sizes, int arguments).

Libraries build these for their kernels (a table of offsets or shapes on the device, an empty placeholder such as
``torch.tensor([[]], device=x.device)``) or for host arithmetic (``int(torch.prod(torch.tensor(shape)))``). The
tracer keeps each one as a real CPU tensor of the call's values together with its values as plan expressions:

* where the tensor reaches the plan (made on the op's device, moved there with ``.to``/``.cuda``, or given to torch
  with the op's tensors), it becomes an ATen step, ``torch_tile::tensor_of_ints``, whose values the plan evaluates
  per call: no guard on them;
* where the body computes with it on the host (``torch.prod``, ``.tolist()``, ``int(...)``), the values it was made
  from are guarded as they are (a plan for other values is another plan) and torch computes on the real tensor.

Integer (and bool) data on the device, and single floats (a constant or a float argument, ``aten::scalar_tensor``):
floats are not plan expressions.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch.utils import _pytree as pytree

from .. import _C, _plan
from .expr import SymbolicInt, encode_int
from .stand_ins import SymbolicFloat, TensorMeta, TensorProxy, concrete, contiguous_strides
from .state import body_location

A = _plan.AtenArgKind
_MAKERS = (torch.tensor, torch.as_tensor)
# Tensor methods that move a tensor to a device (their device argument names where).
_MOVES = {torch.Tensor.to, torch.Tensor.cuda}


def makes_host_tensor(func, args: tuple, kwargs: dict) -> bool:
    """Whether ``func(*args, **kwargs)`` makes a tensor from host values (not from a tensor)."""
    if func not in _MAKERS:
        return False
    data = args[0] if args else kwargs.get("data")
    return not any(isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves(data))


class HostTensors:
    """The host-value tensors of one trace (the tracer owns one)."""

    def __init__(self, tracer):
        self.tracer = tracer
        # id(tensor) -> (the tensor, its values as the body gave them, flattened; None once guarded or computed)
        self._known: dict[int, tuple[torch.Tensor, Optional[list]]] = {}

    def involved(self, args: tuple, kwargs: dict) -> bool:
        return any(id(leaf) in self._known for leaf in pytree.tree_leaves((args, kwargs)))

    def make(self, func, args: tuple, kwargs: dict):
        """``torch.tensor(data, ...)``: a real CPU tensor of the call's values; a plan step where it is made on
        the op's device."""
        kwargs = dict(kwargs)
        data = args[0] if args else kwargs.pop("data")
        device = kwargs.pop("device", None)
        kwargs.pop("requires_grad", None)  # an op's outputs get their autograd from the op
        kwargs.pop("pin_memory", None)
        unsupported = sorted(set(kwargs) - {"dtype"})
        if unsupported:
            raise self.tracer.error(f"`{func.__name__}(...)` got unsupported arguments {unsupported}")
        with torch._C.DisableTorchFunction():
            host = torch.tensor(pytree.tree_map(concrete, data), dtype=kwargs.get("dtype"))
        values = pytree.tree_leaves(data)  # row-major, as torch.tensor reads nested sequences
        self._known[id(host)] = (host, values)
        # Made where the op's tensors are (even on the CPU path): a plan step; else a host tensor until used.
        return host if device is None else self.materialize(host, device)

    def materialize(self, host: torch.Tensor, device=None, dtype: Optional[torch.dtype] = None) -> TensorProxy:
        """``host`` as a plan step making it on the op's device (``dtype``: converted to it)."""
        tracer = self.tracer
        if device is not None:
            tracer._device_of(device)
        _, values = self._known[id(host)]
        values = values if values is not None else host.reshape(-1).tolist()
        dtype = dtype or host.dtype
        if host.numel() and (host.dtype.is_floating_point or host.dtype.is_complex):
            if host.dim() == 0 and not host.dtype.is_complex:  # one float (`torch.tensor(1.0, device=...)`)
                return self.scalar_tensor(values[0], dtype)
            raise tracer.error(f"a tensor of {host.dtype} host values on {tracer.device}: a launch plan holds "
                               "integer values and single floats only (pass the tensor as an argument, or make it "
                               "from ints)")
        sizes = list(host.shape)
        strides = list(contiguous_strides(sizes))
        step = _plan.AtenStep("torch_tile::tensor_of_ints", "", [
            _plan.AtenArg(A.INT_LIST, ints=[_plan.expr(encode_int(v, tracer)) for v in values]),
            _plan.AtenArg(A.INT_LIST, ints=[_plan.expr(encode_int(s, tracer)) for s in sizes]),
            _plan.AtenArg(A.INT, ints=[_plan.expr(encode_int(_C.enum_code(dtype), tracer))]),
            _plan.AtenArg(A.DEVICE)], 1, body_location(*tracer.op.sources))
        tracer.check_dtype(dtype, "a tensor of host values")
        (proxy,) = tracer.add_aten_step(step, [(TensorMeta(sizes, strides, dtype), sizes, strides)])
        return proxy

    def scalar_tensor(self, value, dtype: torch.dtype) -> TensorProxy:
        """A 0-d tensor of one number on the op's device (a constant, a float argument read per call, an int
        expression): ``aten::scalar_tensor``."""
        tracer = self.tracer
        tracer.check_dtype(dtype, "a tensor of host values")
        if isinstance(value, SymbolicFloat):
            number = _plan.AtenArg(A.SCALAR, slots=[value.arg])
        elif isinstance(value, (int, SymbolicInt)) and not isinstance(value, bool):
            number = _plan.AtenArg(A.SCALAR, ints=[_plan.expr(encode_int(value, tracer))])
        else:
            number = _plan.AtenArg(A.SCALAR, number=float(value))
        step = _plan.AtenStep("aten::scalar_tensor", "", [
            number, _plan.AtenArg(A.INT, ints=[_plan.expr(encode_int(_C.enum_code(dtype), tracer))]),
            _plan.AtenArg(A.NONE), _plan.AtenArg(A.DEVICE), _plan.AtenArg(A.NONE)], 1,
            body_location(*tracer.op.sources))
        (proxy,) = tracer.add_aten_step(step, [(TensorMeta([], [], dtype), [], [])])
        return proxy

    def on_device(self, values):
        """``values`` (a pytree) with each host tensor made a plan step on the op's device (a kernel's argument)."""
        return pytree.tree_map(lambda v: self.materialize(v) if isinstance(v, torch.Tensor) and id(v) in self._known
                               else v, values)

    def call(self, func, args: tuple, kwargs: dict):
        """A torch call given host tensors: moved to the op's device, a plan step; with the op's tensors, they
        become plan steps first; on the host alone, computed for real once their values are guarded."""
        if func in _MOVES and id(args[0]) in self._known:
            device, dtype = _move_target(func, args[1:], kwargs)
            if device is not None and torch.device(device).type == self.tracer.device.type:
                return self.materialize(args[0], device, dtype)
        leaves = pytree.tree_leaves((args, kwargs))
        if any(isinstance(leaf, (TensorProxy, SymbolicInt, SymbolicFloat)) for leaf in leaves):
            args, kwargs = self.on_device((args, kwargs))
            return self.tracer.torch_function(func, args, kwargs)
        for leaf in leaves:
            if id(leaf) in self._known:
                self._guard(leaf)
        with torch._C.DisableTorchFunction():
            out = func(*args, **kwargs)
        for leaf in pytree.tree_leaves(out):
            if isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu" and id(leaf) not in self._known:
                self._known[id(leaf)] = (leaf, None)
        return out

    def _guard(self, host: torch.Tensor) -> None:
        """The values ``host`` was made from, guarded as they are: from here on it holds plain numbers."""
        _, values = self._known[id(host)]
        for v in values or ():
            if isinstance(v, (SymbolicInt, SymbolicFloat)):
                v.specialize()
        self._known[id(host)] = (host, None)


def _move_target(func, args: tuple, kwargs: dict) -> tuple[Any, Optional[torch.dtype]]:
    """(device, dtype) of ``t.to(...)`` / ``t.cuda(...)``."""
    if func is torch.Tensor.cuda:
        device = args[0] if args else kwargs.get("device")
        return (torch.device("cuda") if device is None else torch.device("cuda", device) if isinstance(device, int)
                else device), None
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, (str, torch.device)):
            device = a
    return device, dtype


