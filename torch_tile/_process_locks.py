"""Locks that belong to one process: a child made by ``os.fork()`` gets them free.

A forked child has only the thread that called fork. A lock another thread held at that moment (inside a
trace, a compile, an interpretation, a disk-cache write) stays held in the child, where no thread will
ever release it, and the child's first tile-op call would wait on it forever (DataLoader workers and
other forked processes of a program whose threads use tile ops). So, as torch and Triton reset their own
state in a child, every lock of torch_tile's modules is made here and made free again in the child
(``os.register_at_fork``); state that counts what other threads were doing (the code-generation lock's
readers, Triton patches applied while bodies run, disk-cache lock files) is reset by the function its
module registers with ``after_fork_in_child``. The forking thread's own thread-local state carries over.

None of these plain locks is held around code that could fork (they guard a few lines each), so the
forking thread itself never holds one; the code-generation lock, held across compiles, keeps what the
forking thread holds.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Callable

_locks: "weakref.WeakSet" = weakref.WeakSet()  # every lock made here that is still alive
_resets: list[Callable[[], None]] = []


def lock() -> threading.Lock:
    """A ``threading.Lock`` that a forked child gets free."""
    made = threading.Lock()
    _locks.add(made)
    return made


def rlock() -> threading.RLock:
    """A ``threading.RLock`` that a forked child gets free."""
    made = threading.RLock()
    _locks.add(made)
    return made


def after_fork_in_child(reset: Callable[[], None]) -> Callable[[], None]:
    """Runs ``reset`` in every child made by ``os.fork()``, once the locks are free; returns it."""
    _resets.append(reset)
    return reset


def _free_in_child() -> None:
    for made in list(_locks):
        made._at_fork_reinit()  # what CPython's own modules (logging, concurrent.futures) do in a child
    for reset in _resets:
        reset()


os.register_at_fork(after_in_child=_free_in_child)


class ScopedPatch:
    """Process-wide patches (``apply()``/``undo()``) in place while at least one scope (``with patch:``) is open
    in any thread: refcounted under a lock of this module; a forked child keeps only the forking thread's scopes
    (the patches are undone there if it has none)."""

    def __init__(self, apply: Callable[[], None], undo: Callable[[], None]):
        self._apply, self._undo = apply, undo
        self._lock = lock()
        self._depth = 0  # scopes open in all threads
        self._held = threading.local()  # .depth: this thread's share
        after_fork_in_child(self._forget_other_threads)

    def __enter__(self):
        with self._lock:
            if self._depth == 0:
                self._apply()
            self._depth += 1
        self._held.depth = getattr(self._held, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        self._held.depth -= 1
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._undo()
        return False

    def _forget_other_threads(self) -> None:
        self._depth = getattr(self._held, "depth", 0)
        if self._depth == 0:
            self._undo()
