"""Checks one call's arguments against its op's schema on the Python paths
(the CPU interpreter path, the fake/meta implementation, tracing), with the
messages the C++ CUDA kernel gives: op, argument, what was expected, what came.

torch's dispatcher does not check these for a custom op: a None passed for a
Tensor arrives as None, tensors on different devices (meta with CPU, CUDA with
meta) reach the kernel of whichever device the dispatcher picked, and a None
passed for a bool reads as False.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from .. import _C
from .._plan import ArgKind, is_optional, value_kind


# The dtypes an op's tensors may have, and those its kernels take (not complex: bodies view it as real): the C++
# runtime's table (csrc/torch/dtype_map.cpp).
PLAN_DTYPES = frozenset(_C.plan_dtypes(kernel_only=False))
KERNEL_DTYPES = frozenset(_C.plan_dtypes(kernel_only=True))

_SCALAR_TYPES = {
    ArgKind.INT: (int, torch.SymInt),
    ArgKind.FLOAT: (float, int, torch.SymFloat, torch.SymInt),
    ArgKind.BOOL: (bool, torch.SymBool),
    ArgKind.STRING: (str,),
    ArgKind.DTYPE: (torch.dtype,),
    ArgKind.INT_LIST: (list, tuple),
}
_SCALAR_NAMES = {ArgKind.INT: "an int", ArgKind.FLOAT: "a float", ArgKind.BOOL: "a bool", ArgKind.STRING: "a str",
                 ArgKind.DTYPE: "a torch.dtype",
                 ArgKind.INT_LIST: "a list of ints"}


def flat_arguments(args: Sequence[Any]) -> list:
    """A call's arguments with the items of list arguments (``Tensor[]``) in their place."""
    return [v for a in args for v in (a if isinstance(a, (list, tuple)) else (a,))]


def _describe(value: Any) -> str:
    return "None" if value is None else f"a value of type {type(value).__name__}"


def check_call_arguments(op: Any, args: Sequence[Any]) -> None:
    """Raises TypeError / ValueError for arguments the op cannot take: a
    missing or non-tensor value for a Tensor, a dtype no kernel takes, tensors
    on different devices, None or a wrong type for a scalar, and (for ops that
    write their arguments) overlapping written tensors. An op without tensor
    arguments is the tracer's error."""
    # torch passes trailing arguments left at their schema defaults as absent.
    first = None  # (name, device) of the first tensor argument
    for name, kind, value in zip(op.arg_names, op.arg_kinds, args):
        where = f"{op.qualname}: argument '{name}'"
        if is_optional(kind):
            if value is None:
                continue
            kind = value_kind(kind)
        if kind == ArgKind.TENSOR_LIST:
            if not isinstance(value, (list, tuple)):
                raise TypeError(f"{where} expected a list of Tensors, got {_describe(value)}")
            for k, item in enumerate(value):
                first = _check_tensor(f"{op.qualname}: argument '{name}[{k}]'", name, item, first)
            continue
        if kind != ArgKind.TENSOR:
            if not isinstance(value, _SCALAR_TYPES[kind]) or (kind == ArgKind.INT and isinstance(value, bool)) or (
                    kind == ArgKind.INT_LIST and not all(isinstance(v, (int, torch.SymInt)) for v in value)):
                raise TypeError(f"{where} expected {_SCALAR_NAMES[kind]}, got {_describe(value)}")
            continue
        first = _check_tensor(where, name, value, first)
    _C.check_written_arguments(op.qualname, tuple(args))


def _check_tensor(where: str, name: str, value: Any, first):
    """Checks one tensor (``where``: op and argument, for messages); returns
    the (name, device) of the first tensor argument."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{where} expected a Tensor, got {_describe(value)}")
    if value.dtype not in PLAN_DTYPES:
        raise TypeError(f"{where} expected a dtype a launch plan can hold, got {value.dtype}")
    if first is None:
        return (name, value.device)
    if value.device != first[1]:
        raise ValueError(f"{where} expected a tensor on {first[1]} like argument '{first[0]}', got a tensor "
                         f"on {value.device}")
    return first
