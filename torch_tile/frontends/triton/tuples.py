"""Tuple-typed kernel parameters (Triton's tuple arguments: ``k[grid]((x, y), (n, m))``).

A tuple argument, nested tuples and namedtuples included, reaches the C++
runtime as its leaves: one binding per leaf, depth first, the order in which
Triton's launcher flattens it. A launch configuration keeps the structure of
each tuple parameter (a ``TupleShape``), so that the compile path can rebuild
tuples that Triton's binder specialises as the key says. A leaf is named by
its path below the parameter, as ``ptrs[1][0]``; a full leaf path starts with
the parameter's name: ``("ptrs", 1, 0)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

Path = tuple[int, ...]


@dataclass(frozen=True)
class TupleShape:
    """The structure of one tuple value: its type (``tuple`` or a namedtuple
    class) and, per item, the item's structure (None: a leaf)."""

    type: type
    items: tuple[Optional["TupleShape"], ...]


def _make(kind: type, items: list) -> tuple:
    # A namedtuple takes its fields as arguments, a tuple an iterable (as Triton's _tuple_create).
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def shape_of(value: Any) -> Optional[TupleShape]:
    """The structure of ``value`` (None when it is not a tuple)."""
    if not isinstance(value, tuple):
        return None
    return TupleShape(type(value), tuple(shape_of(item) for item in value))


def leaves(value: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """(path, leaf) of every leaf of ``value``, depth first; a non-tuple is its own leaf (path ``()``)."""
    if not isinstance(value, tuple):
        return [(path, value)]
    return [leaf for k, item in enumerate(value) for leaf in leaves(item, (*path, k))]


def build(shape: TupleShape, leaf: Callable[[Path], Any], path: Path = ()) -> tuple:
    """A tuple of structure ``shape`` whose leaf at each path is ``leaf(path)``
    (called depth first, so ``leaf`` may consume an iterator)."""
    items = [leaf((*path, k)) if item is None else build(item, leaf, (*path, k)) for k, item in enumerate(shape.items)]
    return _make(shape.type, items)


def map_leaves(fn: Callable[[Any], Any], value: Any) -> Any:
    """``value`` with ``fn`` applied to each leaf (to ``value`` itself when it is not a tuple)."""
    if not isinstance(value, tuple):
        return fn(value)
    return _make(type(value), [map_leaves(fn, item) for item in value])


def leaf_name(name: str, path: Path) -> str:
    """How messages and launch configurations name a leaf: ``ptrs[1][0]``."""
    return name + "".join(f"[{k}]" for k in path)


def at(arguments: dict[str, Any], full_path: tuple) -> Any:
    """The leaf at ``(parameter name, *path)`` of a launch's bound arguments."""
    value = arguments[full_path[0]]
    for k in full_path[1:]:
        value = value[k]
    return value


def stable(shape: TupleShape) -> list:
    """A JSON value that identifies a structure across processes (a
    namedtuple's class and fields enter the compiled code's signature)."""
    kind = shape.type
    name = "tuple" if kind is tuple else f"{kind.__module__}.{kind.__qualname__}"
    fields = list(getattr(kind, "_fields", ()))
    return [name, fields, [None if item is None else stable(item) for item in shape.items]]
