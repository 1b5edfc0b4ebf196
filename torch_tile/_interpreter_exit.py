"""torch_tile's work in other threads when the interpreter exits.

CPython (before 3.14) ends a daemon thread that still runs when the interpreter finalizes at the moment it
next takes the GIL, with pthread_exit; inside torch's bindings, which release the GIL around their C++ work,
that aborts the process (std::terminate). A program that exits while other threads trace op bodies, compile
variants or interpret kernels (all of which call torch) would abort. So the exit waits for that work: an
atexit handler (registered after torch's, so it runs before torch deregisters its ops) lets the traces,
compiles and interpreted launches in flight finish (at most ``DRAIN_SECONDS``), and from then on a thread
other than the main one that finishes such work, or would start some, parks: it never runs again, and the
exiting process ends it (as CPython 3.14 parks threads at exit). Where C++ takes the GIL, it parks a thread
the same way (csrc/python/interpreter_exit.h).
"""

from __future__ import annotations

import atexit
import functools
import threading
from typing import Callable, TypeVar

from . import _process_locks

DRAIN_SECONDS = 60.0  # how long the exit waits for work in flight; past it, it exits as without torch_tile

_state = threading.Condition(_process_locks.lock())
_depth: dict[int, int] = {}  # thread -> how deep it is in work (traces call compiles...)
_exiting = False
_never = threading.Event()  # parked threads wait for it

F = TypeVar("F", bound=Callable)


def work(fn: F) -> F:
    """``fn`` is torch_tile work that the interpreter's exit waits for (see the module's doc)."""
    @functools.wraps(fn)
    def waited_for(*args, **kwargs):
        _enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _leave()

    return waited_for  # type: ignore[return-value]


def _parks() -> bool:
    """Whether this thread parks instead of doing work (or going on after it): the exit has begun."""
    return _exiting and threading.current_thread() is not threading.main_thread()


def _enter() -> None:
    me = threading.get_ident()
    with _state:
        if _parks() and me not in _depth:
            park = True
        else:
            park = False
            _depth[me] = _depth.get(me, 0) + 1
    if park:
        _never.wait()


def _leave() -> None:
    me = threading.get_ident()
    with _state:
        if _depth[me] == 1:
            del _depth[me]
            if _exiting:  # only the exit waits for the work to end
                _state.notify_all()
        else:
            _depth[me] -= 1
        park = _parks() and me not in _depth
    if park:
        _never.wait()


@atexit.register
def _drain() -> None:
    """The exit: work in flight in other threads finishes; later work parks."""
    global _exiting
    me = threading.get_ident()
    with _state:
        _exiting = True
        _state.wait_for(lambda: all(thread == me for thread in _depth), timeout=DRAIN_SECONDS)


@_process_locks.after_fork_in_child
def _forget_other_threads() -> None:
    """A forked child has only the forking thread: only its work is in flight there."""
    me = threading.get_ident()
    for thread in [t for t in _depth if t != me]:
        del _depth[thread]
