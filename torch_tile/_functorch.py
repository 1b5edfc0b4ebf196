"""Tile ops under torch.func transforms (grad, vjp, jacrev, vmap, functionalize).

torch runs an autograd.Function under torch.func transforms through its ``custom_function_call`` operator,
whose rules work one transform level at a time: grad and vjp take the Function's backward, vmap its ``vmap``
staticmethod. A tile op's Autograd kernel (C++) runs inside a transform's processing, where that operator can
no longer reach the transforms, so every functional op gets a kernel at the key every transform enters through
(FuncTorchDynamicLayerFrontMode): there the op is its autograd.Function applied, as a call of that Function from
Python would be:

* grad, vjp, jacrev and their nestings: the registered backward (or the backwards of the autograd.Functions the
  body applies, through their tape: see _training.py), at each level (the op's own calls below are plain calls:
  native plans); an op with neither runs, and its backward names it if a transform differentiates it;
* vmap: the op's vmap rule (``TileOp.register_vmap``, as torch.library's), else one call of the op per sample,
  the results stacked;
* jvp, jacfwd: an error naming the op (tile ops have no forward-mode derivative);
* functionalize: the op is functional: its inputs unwrapped, the op called one level down, its outputs wrapped
  (what torch's Functionalize layer does for such an op).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch
from torch._C._functorch import TransformType, _unwrap_functional_tensor, _wrap_functional_tensor, \
    is_functionaltensor
from torch._functorch.pyfunctorch import retrieve_current_functorch_interpreter
from torch.utils import _pytree as pytree

if TYPE_CHECKING:
    from ._op import TileOp

# The dispatch key at which every torch.func transform first sees a call.
TRANSFORMS_KEY = "FuncTorchDynamicLayerFrontMode"


def route(op: "TileOp", lib: torch.library.Library, name: str) -> None:
    """Runs ``op`` under torch.func transforms as its autograd.Function (once per op)."""
    if op.routed_through_functorch:
        return
    lib.impl(name, lambda *args, **kwargs: _under_transforms(op, op._arguments(args, kwargs)), TRANSFORMS_KEY)
    op.routed_through_functorch = True


def _under_transforms(op: "TileOp", values: tuple) -> Any:
    interpreter = retrieve_current_functorch_interpreter()
    if interpreter.key() == TransformType.Functionalize:
        return _functionalized(op, interpreter, values)
    if interpreter.key() in (TransformType.Grad, TransformType.Jvp):
        _refuse_differentiated_lists(op, values)
    if op.backward_fn is None and op.differentiates_itself(values):  # the autograd.Functions its body applies
        return op.apply_functions(values)
    return op.autograd_function.apply(*values)


def _functionalized(op: "TileOp", interpreter, values: tuple) -> Any:
    add_back_views = interpreter.functionalize_add_back_views()
    inputs = pytree.tree_map_only(
        torch.Tensor, lambda t: _unwrap_functional_tensor(t, add_back_views) if is_functionaltensor(t) else t, values)
    with interpreter.lower():
        outputs = op.overload(*inputs)
    return pytree.tree_map_only(torch.Tensor, lambda t: _wrap_functional_tensor(t, interpreter.level()), outputs)


def _refuse_differentiated_lists(op: "TileOp", values: tuple) -> None:
    """An autograd.Function does not see the tensors inside a list: a gradient through one would silently be
    missing, so differentiating a list[Tensor] argument is refused (as outside transforms)."""
    for name, value in zip(op.arg_names, values):
        if isinstance(value, (list, tuple)) and any(isinstance(t, torch.Tensor) and
                                                      torch._C._functorch.is_gradtrackingtensor(t) for t in value):
            raise NotImplementedError(
                f"{op.qualname}: argument '{name}' (a list[Tensor]) is differentiated by a torch.func transform; "
                "tile ops do not differentiate through list[Tensor] arguments: pass the tensor as a Tensor "
                "argument")


def vmap_rule(op: "TileOp") -> Callable:
    """The autograd.Function's ``vmap`` staticmethod: the op's registered rule, else one call per sample."""
    def vmap(info, in_dims, *args):
        if op.vmap_fn is not None:
            return op.vmap_fn(info, in_dims, *args)
        return _per_sample(op, info, in_dims, args)

    return vmap


def _per_sample(op: "TileOp", info, in_dims: tuple, args: tuple) -> tuple:
    """``op`` called on each sample of the batch (batched arguments indexed at their batch dimension), its
    results stacked along a new dimension 0: (outputs, out_dims)."""
    if info.batch_size == 0:
        raise ValueError(f"{op.qualname}: vmap over a batch of size 0: the op's vmap rule calls it once per sample "
                         "(register one with register_vmap to batch an empty batch)")

    def sample(value, dim, b: int):
        if isinstance(value, (list, tuple)):
            dims = dim if isinstance(dim, (list, tuple)) else [dim] * len(value)
            return type(value)(sample(v, d, b) for v, d in zip(value, dims))
        return value if dim is None else value.select(dim, b)

    results = [op.overload(*(sample(a, d, b) for a, d in zip(args, in_dims))) for b in range(info.batch_size)]
    if op.num_returns == 1:
        return torch.stack(results), 0
    return tuple(torch.stack(outputs) for outputs in zip(*results)), (0,) * op.num_returns


def no_forward_derivative(op: "TileOp") -> Callable:
    """The autograd.Function's ``jvp`` staticmethod: an error naming the op."""
    def jvp(ctx, *tangents):
        raise NotImplementedError(
            f"{op.qualname} has no forward-mode derivative: torch.func.jvp, jacfwd and hessian (and "
            "torch.autograd.forward_ad) need one; tile ops differentiate in reverse mode (grad, vjp, jacrev)")

    return jvp
