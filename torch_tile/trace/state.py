"""Which thread is tracing which op body (thread-local), and where in the body.

The stand-ins, the descriptor hooks and the autotuner find the active tracer
here, so none of them imports the tracer itself."""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator, Optional


_local = threading.local()


def current_tracer() -> Optional[Any]:
    """The tracer running on this thread, or None."""
    return getattr(_local, "tracer", None)


@contextlib.contextmanager
def tracing(tracer: Any) -> Iterator[None]:
    """Makes ``tracer`` this thread's active tracer for the duration."""
    previous = current_tracer()
    _local.tracer = tracer
    try:
        yield
    finally:
        _local.tracer = previous


@contextlib.contextmanager
def outside_trace():
    """Real work in the middle of a trace (autotuning's timing runs): this
    thread is not tracing for its duration."""
    previous = current_tracer()
    _local.tracer = None
    try:
        yield
    finally:
        _local.tracer = previous


def body_location(*fns) -> str:
    """'file:line' of the innermost frame executing one of ``fns`` (an op's
    body, its setup_context, its backward; ``TileOp.sources``), else the first's definition."""
    codes = {fn.__code__ for fn in fns}
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in codes:
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return f"{fns[0].__code__.co_filename}:{fns[0].__code__.co_firstlineno}"
