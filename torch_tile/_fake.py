"""The fake (meta) implementation of a tile op, used by torch.compile, export
and shape propagation.

It traces the body on the call's size hints into the same launch plan the
CUDA kernel runs, then builds the outputs from the plan's allocation shapes
evaluated on the call's SymInts. Size arithmetic stays symbolic, and only the
guards made before the body's last allocation (those that can change what the
op returns) become torch.compile guards: a branch that only picks launch
options, such as ``num_warps = 4 if BLOCK < 2048 else 8``, does not make
torch.compile recompile when a size crosses it. Calls with sizes that have no
hint (data-dependent sizes) run the body on the fake tensors instead, with
launches skipped, as torch does for ``triton_op``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from ._call_arguments import check_call_arguments
from ._expr import evaluate
from ._launch_mode import SkipLaunches, launch_mode
from ._plan import AllocKind

if TYPE_CHECKING:
    from ._op import TileOp


def _hint(v):
    """The concrete value behind an int or SymInt (None for an unbacked SymInt)."""
    return v.node.hint if isinstance(v, torch.SymInt) else v


def _hinted(value):
    """A meta tensor (or int) with the concrete values behind ``value``'s SymInts."""
    if isinstance(value, torch.Tensor):
        sizes = [_hint(s) for s in value.shape]
        strides = [_hint(s) for s in value.stride()]
        with unset_fake_temporarily():
            return torch.empty_strided(sizes, strides, dtype=value.dtype, device="meta")
    return _hint(value)


def _all_hinted(args) -> bool:
    for a in args:
        values = [*a.shape, *a.stride()] if isinstance(a, torch.Tensor) else [a]
        if any(_hint(v) is None for v in values):
            return False
    return True


def fake_call(op: "TileOp", args: tuple):
    check_call_arguments(op, args)  # the devices, before the stand-ins below become meta tensors
    if not _all_hinted(args):
        with launch_mode(SkipLaunches()):
            return op.fn(*args)
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
    plan = op.trace(*[_hinted(a) for a in args], device=device)
    tensors = list(args)  # inputs by argument index, then outputs by slot
    for guard in plan.shape_guards:
        # Holds for the hints by construction; on SymInts, bool() installs the guard.
        if not bool(evaluate(guard.code, tensors, args)):
            raise AssertionError(f"{op.qualname}: a traced guard does not hold for the call that traced it")
    for alloc in plan.allocs:
        if alloc.kind == AllocKind.EMPTY_LIKE:
            out = torch.empty_like(tensors[alloc.like_slot], dtype=alloc.dtype)
        else:
            shape = [evaluate(e.code, tensors, args) for e in alloc.shape]
            out = torch.empty(shape, dtype=alloc.dtype, device=device)
        tensors.append(out)
    outputs = tuple(tensors[slot] for slot in plan.outputs)
    if op.num_returns == 0:
        return None
    return outputs[0] if op.num_returns == 1 else outputs
