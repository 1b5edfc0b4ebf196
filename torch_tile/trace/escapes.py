"""Stand-ins kept past their trace by the body's code.

A body may hand a stand-in to code that keeps it: a library's
``functools.lru_cache`` helper called with a size, a memo dict, a module
global. Left there, the library's later calls would get it back: outside
torch_tile (a ``SymbolicInt`` where an ``int`` belongs), or in another trace,
where its expression reads another op's arguments. So when a trace ends the
tracer drops its own references to its stand-ins (weak references tell which
are still alive), and the ones still alive are looked up (``gc.get_referrers``:
a cost paid only when something kept one) and replaced where they are kept by
the values they stood for: the call's int or float, an argument's tensor. That
is what the library would have kept had the body run eagerly. Caches that
cannot be edited (functools' lru caches) are cleared. A stand-in kept anywhere
else stops working, with an error naming the op, at its next use.
"""

from __future__ import annotations

import functools
import gc
import types
from typing import Any, Callable

from .._errors import TraceError

DROP = object()  # what ``value_of`` gives for a stand-in with no value outside its trace (a tensor the body made)
_MAX_DEPTH = 4  # tuples of tuples of ... a stand-in: how far up immutable holders are followed
# A finished body's frames, an exception's traceback, and generators: settling's own walk over an immutable
# holder's holders is one (it refers to the holder it is at).
_NOT_STATE = (types.FrameType, types.TracebackType, types.GeneratorType)


class ReleasedTrace:
    """What a stand-in kept past its trace refers to instead of its tracer: any use raises, naming the op."""

    def __init__(self, qualname: str):
        self._qualname = qualname

    def __getattr__(self, name: str):
        raise TraceError(f"{self._qualname}: a stand-in of the op's trace (for a size, a float or a tensor of the "
                         "traced call) was kept by the body's code past the trace, where torch_tile could not "
                         "replace it by its value; keep plain values instead (int(n), float(x))")


class _Settling:
    """The tracer of stand-ins being settled: moving them between dicts hashes and compares them, which would
    record guards; it records nothing."""

    def add_guard(self, *args, **kwargs) -> None:
        pass

    def note_arithmetic(self) -> None:
        pass

    def track(self, stand_in) -> None:
        pass


def settle(survivors: list, value_of: Callable[[Any], Any], internal: set, qualname: str) -> None:
    """Replaces the stand-ins in ``survivors`` where they are kept by ``value_of(stand_in)`` (``DROP``: the
    entry is removed); ``internal`` holds the ids of containers that belong to the stand-ins themselves.
    Stand-ins kept where nothing can be edited are released (``ReleasedTrace``)."""
    for s in survivors:
        _point(s, _Settling())
    replacing = _Replacing({id(s): s for s in survivors}, value_of)
    skip = internal | {id(survivors), id(replacing.standing)}  # settling's own tables are no holders
    for holder in gc.get_referrers(*survivors):
        if id(holder) in skip or isinstance(holder, _NOT_STATE):
            continue
        if not _settle(holder, replacing, 0):
            for kept in gc.get_referents(holder):
                if id(kept) in replacing.standing:
                    _point(kept, ReleasedTrace(qualname))


class _Replacing:
    def __init__(self, standing: dict, value_of: Callable[[Any], Any]):
        self.standing, self.value_of = standing, value_of

    def holds(self, obj, depth: int = 0) -> bool:
        if id(obj) in self.standing:
            return True
        return depth < _MAX_DEPTH and isinstance(obj, (tuple, frozenset)) and \
            any(self.holds(item, depth + 1) for item in obj)

    def of(self, obj, depth: int = 0):
        """``obj`` with its stand-ins replaced (``DROP`` if one of them has no value)."""
        if id(obj) in self.standing:
            return self.value_of(obj)
        if not self.holds(obj, depth):
            return obj
        items = [self.of(item, depth + 1) for item in obj]
        if any(item is DROP for item in items):
            return DROP
        return frozenset(items) if isinstance(obj, frozenset) else tuple(items)


def _lru_owner(container):
    return next((r for r in gc.get_referrers(container) if isinstance(r, functools._lru_cache_wrapper)), None)


def _settle(holder, replacing: _Replacing, depth: int) -> bool:
    """Replaces the stand-ins ``holder`` keeps; False where it cannot be edited."""
    if isinstance(holder, functools._lru_cache_wrapper):  # it keeps results itself
        holder.cache_clear()
        return True
    if isinstance(holder, dict):
        owner = _lru_owner(holder)  # an lru cache's own table: its entries cannot be edited one by one
        if owner is not None:
            owner.cache_clear()
            return True
        for key, value in list(holder.items()):
            if replacing.holds(key) or replacing.holds(value):
                new_key, new_value = replacing.of(key), replacing.of(value)
                del holder[key]
                if new_key is not DROP and new_value is not DROP:
                    holder[new_key] = new_value
        return True
    if isinstance(holder, list):
        items = [replacing.of(item) for item in holder]
        holder[:] = [item for item in items if item is not DROP]
        return True
    if isinstance(holder, set):
        for item in [item for item in holder if replacing.holds(item)]:
            holder.discard(item)
            new = replacing.of(item)
            if new is not DROP:
                holder.add(new)
        return True
    if isinstance(holder, types.CellType):
        new = replacing.of(holder.cell_contents)
        holder.cell_contents = None if new is DROP else new
        return True
    if isinstance(holder, (tuple, frozenset)) and depth < _MAX_DEPTH:
        # Immutable: its own holders get a copy with the values (``of`` rebuilds nested tuples).
        return all(_settle(h, replacing, depth + 1) for h in gc.get_referrers(holder) if not isinstance(h, _NOT_STATE))
    return False


def _point(stand_in, tracer) -> None:
    """Makes ``tracer`` the one ``stand_in`` reports to (SymbolicInt: sink; SymbolicFloat: tracer; TensorProxy:
    _tracer)."""
    for attr in ("sink", "tracer", "_tracer"):
        try:
            object.__getattribute__(stand_in, attr)
        except AttributeError:
            continue
        object.__setattr__(stand_in, attr, tracer)
