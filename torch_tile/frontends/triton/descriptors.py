"""Triton host-side tensor descriptors (TMA) in op bodies.

An op body builds descriptors the way Triton's own code does::

    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    kernel[grid](a_desc, ...)

While tracing, the descriptor's base is a stand-in, its shape and strides are
expressions over the call's sizes and its block shape is a constant. The plan
holds the descriptor as one binding; the C++ runtime builds the CUtensorMap at
launch time with ``cuTensorMapEncodeTiled`` from the call's tensor, exactly as
Triton's launcher does, validates it (alignment, strides, box) with errors
naming the op and parameter, and caches the encoding per (address, shape,
strides, box, dtype). The checks Triton's ``TensorDescriptor.__post_init__``
makes on the data (address alignment, strides) are therefore made per call in
C++, not as guards on the traced sizes.
"""

from __future__ import annotations

from typing import Any

import torch
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from ... import _plan
from ...trace.expr import SymbolicInt, encode_int
from ...trace.stand_ins import TensorProxy, concrete
from ...trace.state import current_tracer

MAX_RANK = 5  # cuTensorMapEncodeTiled's limit
MAX_BOX = 256  # per dimension, elements
# Triton's tensordesc metadata names the device-side dtype enum; the driver
# takes the host one (as Triton's launcher maps it).
_DTYPE_DEVICE_TO_HOST = {8: 10, 9: 8, 10: 9}

_original_post_init = TensorDescriptor.__post_init__


def tensor_of(value: Any) -> Any:
    """The tensor a kernel argument refers to: a descriptor's base, else the argument."""
    return value.base if isinstance(value, TensorDescriptor) else value


def _tf32_option(round_tf32: bool) -> dict:
    # Passed only when set: Triton 3.6's TensorDescriptor has no such field.
    return {"round_f32_to_tf32": True} if round_tf32 else {}


def _int_of(value: Any) -> Any:
    """A block-shape entry as an int (constexpr wrappers and symbolic values are specialised)."""
    if isinstance(value, tl.constexpr):
        value = value.value
    if isinstance(value, SymbolicInt):
        return value.specialize()
    return value


def check_block_shape(where: str, block_shape, rank: int, error) -> tuple[int, ...]:
    """The block (TMA box) shape as ints; ``error(message)`` builds the exception."""
    block = [_int_of(b) for b in block_shape]
    if len(block) != rank:
        raise error(f"{where}: block_shape {block} has {len(block)} entries for a rank-{rank} descriptor")
    for b in block:
        if not isinstance(b, int) or isinstance(b, bool):
            raise error(f"{where}: block_shape entries must be constant ints, got {b!r}")
        if b <= 0 or b & (b - 1):
            raise error(f"{where}: block_shape {block} must hold powers of two")
        if b > MAX_BOX:
            raise error(f"{where}: block_shape {block} exceeds the TMA box limit of {MAX_BOX} elements per "
                        "dimension (split the block in the kernel)")
    return tuple(block)


def _traced_post_init(self) -> None:
    """Triton's checks, minus the ones on data, for descriptors over stand-ins
    (those are made per call in C++)."""
    tracer = current_tracer()
    if tracer is None:  # another thread's descriptor, while this one traces
        _original_post_init(self)
        return
    if not isinstance(self.base, TensorProxy):
        raise tracer.error(f"a TensorDescriptor's base must be a tensor the op takes or allocates, got "
                           f"{type(self.base).__name__}")
    rank = len(self.shape)
    where = f"TensorDescriptor over '{self.base._name}'"
    if not 1 <= rank <= MAX_RANK:
        raise tracer.error(f"{where}: rank {rank} is not supported by TMA (1 to {MAX_RANK})")
    if len(self.strides) != rank:
        raise tracer.error(f"{where}: {len(self.strides)} strides for {rank} dimensions")
    self.block_shape = list(check_block_shape(where, self.block_shape, rank, tracer.error))
    if self.padding not in ("zero", "nan"):
        raise tracer.error(f"{where}: padding must be 'zero' or 'nan', got {self.padding!r}")
    if self.padding == "nan" and not self.base.dtype.is_floating_point:
        raise tracer.error(f"{where}: padding='nan' needs a floating-point tensor, got {self.base.dtype}")
    if getattr(self, "round_f32_to_tf32", False) and self.base.dtype != torch.float32:
        raise tracer.error(f"{where}: round_f32_to_tf32 needs a float32 tensor, got {self.base.dtype}")


def install_traced_post_init() -> None:
    TensorDescriptor.__post_init__ = _traced_post_init


def restore_post_init() -> None:
    TensorDescriptor.__post_init__ = _original_post_init


def descriptor_binding(tracer, where: str, name: str, desc: TensorDescriptor) -> tuple[_plan.Binding, tuple]:
    """(plan binding, static part for the launch configuration) of a
    descriptor argument. The static part (block shape, padding, tf32
    rounding) selects the compiled variant; the binding carries the base
    tensor's slot and the shape and stride expressions."""
    if not isinstance(desc.base, TensorProxy):
        raise tracer.error(f"{where}: the descriptor's base must be a tensor the op takes or allocates, "
                           f"got {type(desc.base).__name__}")
    rank = len(desc.shape)
    block = check_block_shape(where, desc.block_shape, rank, tracer.error)  # again: a pre_hook may set it
    tf32 = bool(getattr(desc, "round_f32_to_tf32", False))
    nan = desc.padding == "nan"
    shape = [_plan.expr(encode_int(s, tracer)) for s in desc.shape]
    strides = [_plan.expr(encode_int(s, tracer)) for s in desc.strides]
    binding = _plan.Binding(_plan.BindingKind.TENSORDESC, desc.base._slot,
                            desc=_plan.DescriptorBinding(shape, strides, nan, tf32, name))
    return binding, ("tensordesc", block, desc.padding, tf32)


def representative(static: tuple, pointer) -> TensorDescriptor:
    """A descriptor that Triton's binder specialises as the variant's (the
    pointer's dtype, block shape, padding): the shape and strides are placeholders."""
    _, block, padding, tf32 = static
    rank = len(block)
    return TensorDescriptor(pointer, list(block), [16] * (rank - 1) + [1], list(block), padding, **_tf32_option(tf32))


def concrete_descriptor(desc: TensorDescriptor, base: torch.Tensor, where: str) -> TensorDescriptor:
    """A real descriptor over ``base`` with the stand-in's values read without
    guards (autotuning's timing runs), or a ValueError naming ``where`` when
    Triton refuses the tensor (as the launch path's own checks would)."""
    shape, strides = [concrete(s) for s in desc.shape], [concrete(s) for s in desc.strides]
    try:
        return TensorDescriptor(base, shape, strides, [int(_int_of(b)) for b in desc.block_shape], desc.padding,
                                **_tf32_option(getattr(desc, "round_f32_to_tf32", False)))
    except AssertionError as e:
        raise ValueError(f"{where}: {e} (shape {shape}, strides {strides}, {base.dtype}, base address "
                         f"0x{base.data_ptr():x}); TMA needs a 16-byte aligned base, strides that are multiples of "
                         "16 bytes and a contiguous last dimension (pass a contiguous, padded copy)") from None


def runtime_layout(meta: dict | None, where: str) -> tuple[list[str], list[int], dict]:
    """How one descriptor parameter reaches the compiled kernel, as Triton's
    launcher passes it: the CUtensorMap, then the shape (i32 each) and strides
    (i64 each). Returns (types, parts, tensor-map metadata): part k < rank is
    shape[k], rank <= k < 2*rank is strides[k - rank], -1 the map itself."""
    if not meta:
        raise NotImplementedError(
            f"torch_tile: {where} was not lowered to TMA by Triton (no tensordesc metadata; TMA needs sm_90 or "
            "newer); pass the tensor and build the descriptor in the kernel with tl.make_tensor_descriptor")
    if meta.get("fp4_padded") or meta.get("is_im2col"):
        raise NotImplementedError(f"torch_tile: {where}: fp4-padded and im2col tensor descriptors are not supported")
    rank = len(meta["block_size"])
    types = ["nvTmaDesc"] + ["i32"] * rank + ["i64"] * rank
    parts = [-1] + list(range(2 * rank))
    tensor_map = {"swizzle": meta["swizzle"], "elem_size": meta["elem_size"], "block_size": list(meta["block_size"]),
                  "elem_type": _DTYPE_DEVICE_TO_HOST.get(meta["elem_type"], meta["elem_type"])}
    return types, parts, tensor_map
