"""Pointer objects: besides tensors, Triton's launcher takes any object with ``data_ptr()`` and ``dtype`` as a
pointer (``triton.reinterpret``'s TensorWrapper, a library's strided buffer), typed by its ``dtype``: a torch
dtype, or Triton's own."""

from __future__ import annotations

from typing import Any, Optional

import torch
from triton.runtime.jit import mangle_type

from .compile import Pointer
from ...trace.call_arguments import KERNEL_DTYPES


def _torch_dtypes_by_pointer_name() -> dict[str, torch.dtype]:
    names: dict[str, torch.dtype] = {}
    for dtype in sorted(KERNEL_DTYPES, key=str):
        names.setdefault(mangle_type(Pointer(dtype, True)), dtype)
    return names


# Triton's name of each pointer type a plan can pass ("*fp8e5"), by which Triton's dtypes are matched to torch's.
_TORCH_DTYPE_OF_POINTER = _torch_dtypes_by_pointer_name()


def is_pointer_object(value: Any) -> bool:
    """Whether Triton's launcher takes ``value``, which is not a tensor, as a pointer."""
    return not isinstance(value, torch.Tensor) and hasattr(value, "data_ptr") and hasattr(value, "dtype")


def element_dtype(pointer: Any) -> Optional[torch.dtype]:
    """The torch dtype of what a pointer object points at: its ``dtype``, or the torch dtype Triton's launcher
    names as it names Triton's; None where none matches."""
    if isinstance(pointer.dtype, torch.dtype):
        return pointer.dtype
    try:
        return _TORCH_DTYPE_OF_POINTER.get(mangle_type(Pointer(pointer.dtype, True)))
    except Exception:  # noqa: BLE001 - a dtype Triton cannot name either: no match
        return None
