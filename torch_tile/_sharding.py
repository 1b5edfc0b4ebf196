"""Sharding rules of tile ops for DTensor (``TileOp.register_sharding``).

A tile op called with DTensor arguments runs on the local shards where its rule says how, and DTensor
redistributes only where the rule asks (the strategy it picks has the placements the arguments have, else the
cheapest redistribution). A rule is torch's own (``torch.distributed.tensor.experimental.register_sharding``):
called with the arguments (tensors as DTensor specs: global shape, dtype), it returns the acceptable
``(output placements, argument placements)`` pairs, per mesh dimension. torch expands them over the mesh.

The shorthands declare what the op computes and derive the pairs from the shapes; each is checked against the
op's fake implementation on the call's global shapes (an op whose outputs do not have the shapes the shorthand
assumes raises, naming it):

* ``"elementwise"``: every output has the broadcast shape of the tensor arguments, and each element depends only
  on the elements at its position: any dimension of the output may be sharded, with the arguments' matching
  dimensions (a broadcast argument, or a dimension of size one, replicated).
* ``"rowwise"``: the op works on rows, the last dimension of its first tensor argument (norms, softmax, a loss per
  row): any leading dimension may be sharded, in every tensor (argument or output) whose shape starts with those
  leading dimensions; other tensors (a weight over the last dimension) are replicated. ``partial``: the outputs
  that are sums over the rows (a norm's weight gradient): partial sums on each rank where the rows are sharded.
* ``"replicate"``: no sharding: DTensor gathers the arguments and every rank runs the op on whole tensors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Union

import torch

if TYPE_CHECKING:
    from ._op import TileOp

SHORTHANDS = ("elementwise", "rowwise", "replicate")


def register_sharding(op: "TileOp", rule: Union[str, Callable], partial: tuple = ()) -> None:
    """Registers ``rule`` (a callable as torch's ``register_sharding`` takes, or a shorthand's name) for ``op``."""
    if partial and rule != "rowwise":
        raise ValueError(f"{op.qualname}.register_sharding: partial= is for the rowwise shorthand")
    if any(not isinstance(k, int) or not 0 <= k < op.num_returns for k in partial):
        raise ValueError(f"{op.qualname}.register_sharding: partial={partial!r} must name outputs (0 to "
                         f"{op.num_returns - 1})")
    if isinstance(rule, str):
        if rule not in SHORTHANDS:
            raise ValueError(f"{op.qualname}.register_sharding: unknown shorthand {rule!r}; expected one of "
                             f"{', '.join(SHORTHANDS)}, or a callable rule")
        rule = _shorthand(op, rule, tuple(partial))
    elif not callable(rule):
        raise TypeError(f"{op.qualname}.register_sharding: the rule must be a callable or one of "
                        f"{', '.join(SHORTHANDS)}; got {type(rule).__name__}")
    if op.mutated_args or op.returns_list:
        raise NotImplementedError(f"{op.qualname}.register_sharding: the op mutates its arguments or returns "
                                  "list[Tensor]; sharding rules are supported for ops returning tensors only")
    from torch.distributed.tensor.experimental import register_sharding as torch_register_sharding

    torch_register_sharding(op.overload)(rule)


def _shorthand(op: "TileOp", kind: str, partial: tuple) -> Callable:
    def rule(*args, **kwargs):
        from torch.distributed.tensor import Replicate

        pairs = [([Replicate()] * op.num_returns, [Replicate() if _is_spec(a) else None for a in args])]
        if kind == "replicate":
            return pairs
        shapes = [tuple(a.shape) for a in args if _is_spec(a)]
        outputs = _fake_output_shapes(op, args, kwargs)
        if kind == "elementwise":
            return pairs + _elementwise(op, shapes, outputs, args)
        return pairs + _rowwise(op, shapes, outputs, args, partial)

    rule.__qualname__ = f"{op.qualname}:{kind}"
    return rule


def _is_spec(value) -> bool:
    return hasattr(value, "tensor_meta") and hasattr(value, "placements")


def _fake_output_shapes(op: "TileOp", args: tuple, kwargs: dict) -> list[tuple]:
    """The op's output shapes for these arguments' global shapes, from its fake implementation."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def fake(value):
        if not _is_spec(value):
            return value
        meta = value.tensor_meta
        return torch.empty_strided(meta.shape, meta.stride, dtype=meta.dtype, device=value.mesh.device_type)

    with FakeTensorMode(allow_non_fake_inputs=True):
        out = op.overload(*[fake(a) for a in args], **{k: fake(v) for k, v in kwargs.items()})
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [tuple(o.shape) for o in outs]


def _elementwise(op: "TileOp", shapes: list[tuple], outputs: list[tuple], args: tuple) -> list:
    from torch.distributed.tensor import Replicate, Shard

    shape = tuple(torch.broadcast_shapes(*shapes))
    for k, out in enumerate(outputs):
        if out != shape:
            raise ValueError(f"{op.qualname}: its sharding is declared elementwise, but output {k} has shape "
                             f"{list(out)} where its arguments broadcast to {list(shape)} (its fake implementation "
                             "says so): declare another rule")
    pairs = []
    for d in range(len(shape)):
        if shape[d] <= 1:
            continue

        def placement(arg_shape: tuple):
            aligned = d - (len(shape) - len(arg_shape))
            return Shard(aligned) if aligned >= 0 and arg_shape[aligned] == shape[d] else Replicate()

        pairs.append(([Shard(d)] * len(outputs), [placement(tuple(a.shape)) if _is_spec(a) else None
                                                   for a in args]))
    return pairs


def _rowwise(op: "TileOp", shapes: list[tuple], outputs: list[tuple], args: tuple, partial: tuple) -> list:
    from torch.distributed.tensor import Partial, Replicate, Shard

    if not shapes or len(shapes[0]) < 2:
        return []  # no leading dimension to shard
    rows = shapes[0][:-1]
    for k, out in enumerate(outputs):
        if out[:len(rows)] != rows and k not in partial:
            raise ValueError(f"{op.qualname}: its sharding is declared rowwise, but output {k} has shape "
                             f"{list(out)}, which does not start with the rows {list(rows)} of its first tensor "
                             "argument (its fake implementation says so): declare it partial=, or another rule")

    def placement(shape: tuple, d: int):
        return Shard(d) if shape[:len(rows)] == rows else Replicate()

    return [([Partial() if k in partial else placement(out, d) for k, out in enumerate(outputs)],
             [placement(tuple(a.shape), d) if _is_spec(a) else None for a in args])
            for d in range(len(rows)) if rows[d] > 1]
