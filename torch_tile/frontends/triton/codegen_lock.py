"""Keeps Triton's code generator and its interpreter apart, process-wide.

Triton's interpreter (the CPU debug path, ``InterpretLaunches``) works by
patching process-global state for the duration of a launch:
``triton.language``'s builtins, ``JITFunction.__call__`` and the interpret
knob. A compile or a TTIR generation running meanwhile in another thread sees
the patched builtins and fails (``'InterpreterBuilder' object has no attribute
'grid_idx'``). So one readers–writer lock orders them: interpretation holds it
exclusively; code generation (``compile_variant``, the write analysis's TTIR,
Triton launches made while an op body runs) holds it shared, so compiles still
run in parallel with one another.

The lock is re-entrant per thread: a thread that holds it (either way) can take
it shared again, and a thread that holds it exclusively can take it
exclusively again. Taking it exclusively while holding it only shared would
wait for itself forever, so that raises instead. Writers are preferred (new
readers wait while an interpretation waits), so interpretations are not starved
by a stream of compiles.

A second lock (``source_parsing``, re-entrant) serializes parsing Python source
into ``ast`` objects, which Triton does for every kernel it generates code for
(``JITFunction.parse`` in ``make_ir`` and in ``cache_key``; the interpreter's
rewrite too). On CPython 3.11 before 3.11.8, ``ast.parse`` in two threads at
once can fail with ``SystemError: AST constructor recursion depth mismatch``
(CPython gh-106905: the AST constructor's recursion counter is per
interpreter, and a garbage collection during construction can switch
threads). It is held only around the steps that parse, inside the
code-generation lock when both are held, never the other way round.

A child made by ``os.fork()`` gets both free of what the parent's other
threads held (``_process_locks``); the forking thread keeps its own holds.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional

from ... import _process_locks


class ReadersWriterLock:
    """Many readers or one writer; re-entrant per thread, writer-preferring."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._readers = 0  # threads holding the lock shared (each counted once)
        self._writer: Optional[int] = None  # ident of the thread holding it exclusively
        self._writers_waiting = 0
        self._held = threading.local()  # this thread's nesting: .shared, .exclusive

    def _depth(self, mode: str) -> int:
        return getattr(self._held, mode, 0)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        depth = self._depth("shared")
        if depth or self._depth("exclusive"):  # already inside: no new count, never waits
            self._held.shared = depth + 1
            try:
                yield
            finally:
                self._held.shared = depth
            return
        with self._condition:
            while self._writer is not None or self._writers_waiting:
                self._condition.wait()
            self._readers += 1
        self._held.shared = 1
        try:
            yield
        finally:
            self._held.shared = 0
            with self._condition:
                self._readers -= 1
                if self._readers == 0:
                    self._condition.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        depth = self._depth("exclusive")
        if depth:
            self._held.exclusive = depth + 1
            try:
                yield
            finally:
                self._held.exclusive = depth
            return
        if self._depth("shared"):
            raise RuntimeError(
                "torch_tile: Triton's interpreter was entered from code generation in the same thread (e.g. an op "
                "run on CPU from inside a compile); this would wait for itself forever")
        with self._condition:
            self._writers_waiting += 1
            try:
                while self._writer is not None or self._readers:
                    self._condition.wait()
            except BaseException:  # interrupted while waiting: let the readers it held back go on
                self._writers_waiting -= 1
                self._condition.notify_all()
                raise
            self._writers_waiting -= 1
            self._writer = threading.get_ident()
        self._held.exclusive = 1
        try:
            yield
        finally:
            self._held.exclusive = 0
            with self._condition:
                self._writer = None
                self._condition.notify_all()

    def forget_other_threads(self) -> None:
        """In a forked child, where only the forking thread exists: what it holds stays held, the rest is free."""
        exclusive = self._depth("exclusive")
        self._condition = threading.Condition(threading.Lock())
        self._writers_waiting = 0
        self._writer = threading.get_ident() if exclusive else None
        self._readers = 1 if self._depth("shared") and not exclusive else 0


_lock = ReadersWriterLock()
_process_locks.after_fork_in_child(_lock.forget_other_threads)


def code_generation() -> contextlib.AbstractContextManager:
    """Held (shared) while Triton's code generator runs: compiles and TTIR generation."""
    return _lock.shared()


def interpretation() -> contextlib.AbstractContextManager:
    """Held (exclusively) while Triton's interpreter runs with its process-wide patches."""
    return _lock.exclusive()


_parsing = _process_locks.rlock()  # re-entrant: a kernel's cache_key parses its @triton.jit dependencies too


def source_parsing() -> contextlib.AbstractContextManager:
    """Held while Triton parses a kernel's Python source (see the module's docstring)."""
    return _parsing
