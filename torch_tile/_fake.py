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
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx.experimental.symbolic_shapes import guard_or_false

from . import _C
from .trace.call_arguments import check_call_arguments, flat_arguments
from .trace.expr import evaluate
from .trace.symbolic_shapes import optional_hint
from ._launch_mode import SkipLaunches, launch_mode
from ._plan import AllocKind, ArgKind, AtenArgKind, StepKind

if TYPE_CHECKING:
    from ._op import TileOp


def hinted(value):
    """A meta tensor (or int) with the concrete values behind ``value``'s SymInts."""
    if isinstance(value, (list, tuple)):
        return [hinted(v) for v in value]
    if isinstance(value, torch.Tensor):
        sizes = [optional_hint(s) for s in value.shape]
        strides = [optional_hint(s) for s in value.stride()]
        with unset_fake_temporarily():  # requires_grad kept: plans of a body applying Functions guard on it
            return torch.empty_strided(sizes, strides, dtype=value.dtype, device="meta",
                                       requires_grad=value.requires_grad and value.is_floating_point())
    return optional_hint(value)


def all_hinted(args) -> bool:
    """Whether every symbolic size and int of ``args`` has a hint (a value the data decides has none)."""
    for a in flat_arguments(args):
        values = [*a.shape, *a.stride()] if isinstance(a, torch.Tensor) else [a]
        if any(isinstance(v, torch.SymInt) and optional_hint(v) is None for v in values):
            return False
    return True


def scalars_of(args) -> list:
    """The arguments as plan expressions read them (dtypes as their codes)."""
    return [_C.enum_code(a) if isinstance(a, torch.dtype) else a for a in args]


def _aten_value(arg, tensors: list, args: tuple, scalars: list, device):
    """One ATen step argument on this call's (fake) values."""
    K = AtenArgKind
    kind = arg.kind
    ints = [evaluate(e.code, tensors, scalars) for e in arg.ints]
    if kind == K.NONE:
        return None
    if kind == K.TENSOR:
        return tensors[arg.slots[0]]
    if kind in (K.TENSOR_LIST, K.OPTIONAL_TENSOR_LIST):
        return [None if s < 0 else tensors[s] for s in arg.slots]
    if kind == K.INT:
        return ints[0]
    if kind == K.INT_LIST:
        return ints
    if kind == K.BOOL_LIST:
        return [bool(v) for v in ints]
    if kind == K.BOOL:
        return arg.number != 0
    if kind == K.STRING:
        return arg.text
    if kind == K.DEVICE:
        return device
    # FLOAT, SCALAR, WRAPPED_SCALAR (ATen's Python binding wraps a number where a Tensor goes, as in `x * 2`)
    return ints[0] if ints else args[arg.slots[0]] if arg.slots else arg.number


def _aten_overload(step):
    namespace, name = step.name.split("::")
    return getattr(getattr(getattr(torch.ops, namespace), name), step.overload or "default")


def typed_as(base: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``base`` as elements of ``dtype``, as the executor reinterprets a view's base (TorchLaunchHost::tensor): a
    complex tensor's real view (any strides), else torch's dtype view."""
    if base.is_complex() and dtype == base.real.dtype:
        return torch.view_as_real(base)
    return base.view(dtype)


def _copy_of_layout(t: torch.Tensor) -> torch.Tensor:
    """A new tensor of ``t``'s layout, as the CUDA kernel copies such an output (``copy_of_layout`` in
    csrc/torch/output_allocation.h): its sizes and strides, contiguous where a dimension of stride 0 repeats
    elements."""
    if any(guard_or_false(stride == 0) and guard_or_false(size > 1) for size, stride in zip(t.shape, t.stride())):
        return torch.empty(t.shape, dtype=t.dtype, device=t.device)
    return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)


def fake_call(op: "TileOp", args: tuple):
    check_call_arguments(op, args)  # the devices, before the stand-ins below become meta tensors
    if not all_hinted(args):
        with launch_mode(SkipLaunches()):
            return op.call_body(args)
    device = next((a.device for a in flat_arguments(args) if isinstance(a, torch.Tensor)), None)
    plan = op.shape_plan(tuple(hinted(a) for a in args), device)
    if plan.fallback:  # the body runs per call: on fake tensors here, launches skipped, as for triton_op
        with launch_mode(SkipLaunches()):
            return op.call_body(args)
    scalars = scalars_of(args)
    # Slots: inputs by argument index, the items of Tensor[] arguments, then the tensors the plan makes.
    tensors = [*args, *(t for a, k in zip(args, op.arg_kinds) if k == ArgKind.TENSOR_LIST for t in a)]
    first_made = len(tensors)
    for guard in plan.shape_guards:
        # Holds for the hints by construction; on SymInts, bool() installs the guard.
        if not bool(evaluate(guard.code, tensors, scalars)):
            raise AssertionError(f"{op.qualname}: a traced guard does not hold for the call that traced it")
    for step in plan.order:
        if step.kind == StepKind.ALLOC:
            alloc = plan.allocs[step.index]
            if alloc.kind == AllocKind.EMPTY_LIKE:
                out = torch.empty_like(tensors[alloc.like_slot], dtype=alloc.dtype)
            else:
                shape = [evaluate(e.code, tensors, scalars) for e in alloc.shape]
                out = torch.empty(shape, dtype=alloc.dtype, device=device)
            tensors.append(out)
        elif step.kind == StepKind.VIEW:
            view = plan.views[step.index]
            base = tensors[view.base]
            base = base if base.dtype == view.dtype else typed_as(base, view.dtype)
            sizes = [evaluate(e.code, tensors, scalars) for e in view.sizes]
            strides = [evaluate(e.code, tensors, scalars) for e in view.strides]
            offset = evaluate(view.offset.code, tensors, scalars)
            tensors.append(base.as_strided(sizes, strides, base.storage_offset() + offset))
        elif step.kind == StepKind.CONSTANT:  # a tensor the plan holds: here, one of its layout
            constant = plan.constants[step.index]
            tensors.append(torch.empty_strided(constant.sizes, constant.strides, dtype=constant.dtype, device=device))
        elif step.kind == StepKind.ATEN:
            aten = plan.aten_steps[step.index]
            overload = _aten_overload(aten)
            values = [_aten_value(a, tensors, args, scalars, device) for a in aten.args]
            keywords = {a.name: v for a, v in zip(overload._schema.arguments, values) if a.kwarg_only}
            result = overload(*values[:len(values) - len(keywords)], **keywords)
            if aten.num_outputs:  # the tensors among the returns, as the trace recorded them
                tensors.extend(r for r in pytree.tree_leaves(result) if isinstance(r, torch.Tensor))
    # Each output is a tensor of its own, as the CUDA kernel returns it (a copy where the body returned an input, a
    # view of one or another output; a view of the op's intermediate is its own too), except a return the schema
    # declares to be a written argument (`Tensor(a!)`): that argument itself.
    outputs, seen = [], set()
    declared = op.returned_args if not op.returns_list else ()
    for k, slot in enumerate(plan.outputs):
        t = None if slot < 0 else tensors[slot]  # -1: a None gradient
        if k < len(declared) and declared[k] == slot:
            pass  # the schema declares this return the argument itself
        elif t is not None and (t._base is not None or slot < first_made or slot in seen):
            t = _copy_of_layout(t)
        seen.add(slot)
        outputs.append(t)
    outputs = tuple(outputs)
    if op.returns_list:
        return list(outputs)
    if op.num_returns == 0:
        return None
    return outputs[0] if op.num_returns == 1 else outputs
