"""Fallback: calls whose body a launch plan cannot hold run the body itself.

Like a torch.compile graph break: when tracing a body fails for what it does
(not for how it was called), the op gets a *fallback plan* (the guards the trace
had taken up to the failure, and the reason, no steps), and the calls that plan
selects run the body in Python, its kernels launched by their own launchers, as
``torch.library.triton_op`` runs every call. Other calls still trace into
native plans. The first fallback call of each reason warns, every one is
counted (``runtime_counters()["fallback_calls"]``), and ``torch_tile.explain(op)``
lists the reasons. ``@torch_tile.op(..., fallback=False)`` keeps the
``TraceError`` instead.

A fallback is always correct: the body runs exactly as it would without
torch_tile. Only errors that say the op itself is wrong (what it declares it
writes, what it returns) never fall back: torch.library would refuse those too.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import TYPE_CHECKING

import torch

from . import _C, _process_locks
from ._errors import CallError, KernelError, OpDefinitionError, TraceError
from ._launch_mode import DirectLaunches, launch_mode
from .trace.call_arguments import flat_arguments
from .frontends.frontend import InterpretLaunches

if TYPE_CHECKING:
    from ._op import TileOp

_TORCH_TILE_DIR = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_DIRS = (_TORCH_TILE_DIR, os.path.dirname(os.path.abspath(torch.__file__)))
_warned: set[tuple[str, str]] = set()
_warned_lock = _process_locks.lock()


def may_fall_back(op: "TileOp", error: BaseException) -> bool:
    """Whether a failed trace makes a fallback plan (else the error is the call's)."""
    return op.fallback and isinstance(error, Exception) and not isinstance(error, (OpDefinitionError, CallError))


def reason(op: "TileOp", error: Exception) -> str:
    """One line: what the body did that no plan holds, and where (the body's line; the library's line too
    when the failure came from inside a function the body called)."""
    if isinstance(error, TraceError):  # already names the body's line, after the op's name
        text = str(error)
        return text[len(op.qualname) + 2:] if text.startswith(op.qualname + ": ") else text
    frames = traceback.extract_tb(error.__traceback__)
    body = _body_frame(op, frames)
    inner = next((f for f in reversed(frames) if not os.path.abspath(f.filename).startswith(_TORCH_TILE_DIR)), None)
    where = [f"{f.filename}:{f.lineno}" for f in (body, inner) if f is not None]
    where = list(dict.fromkeys(where))  # the body's line may be the innermost one too
    message = str(error).split("\n", 1)[0]
    return f"{' -> '.join(where) or 'in the body'}: {type(error).__name__}: {message}"


def run_body(op: "TileOp", values: tuple, on_cpu: "bool | None" = None) -> object:
    """The body on the call's real arguments, its launches made by their own launchers; its result checked
    against the op's schema (a fallback must return what a native plan would). An error the body raises is
    its own, with a note naming the op. ``on_cpu``: whether the call's tensors are on the CPU (None: look)."""
    if on_cpu is None:
        on_cpu = any(t.device.type == "cpu" for t in flat_arguments(values) if isinstance(t, torch.Tensor))
    return checked_result(op, values, body_result(op, values, on_cpu))


def body_result(op: "TileOp", values: tuple, on_cpu: bool) -> object:
    """What the body returns for ``values``, unchecked: a fallback call's C++ caller checks it (``checked_result``'s
    own check, without converting it twice)."""
    # On CPU tensors, as the op's CPU path runs its body: Triton's interpreter launches the kernels.
    with launch_mode(InterpretLaunches(op)) if on_cpu else DirectLaunches(), \
            NamingTheOp(op, "run in Python for this call"):
        return op.call_body(values)


def _body_frame(op: "TileOp", frames: list) -> "traceback.FrameSummary | None":
    """The innermost of ``frames`` that runs the op's body (or its setup_context, its backward)."""
    body_codes = {(fn.__code__.co_filename, fn.__code__.co_name) for fn in op.sources}
    return next((f for f in reversed(frames) if (f.filename, f.name) in body_codes), None)


class NamingTheOp:
    """An error the body raises gets a note naming the op, the body's line and how the body ran. A class, not a
    generator: a fallback call enters it on every call."""

    __slots__ = ("op", "how")

    def __init__(self, op: "TileOp", how: str):
        self.op, self.how = op, how

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind, error, tb) -> bool:
        if isinstance(error, Exception):
            name_the_op(error, self.op, self.how)
        return False  # the error goes on


def name_the_op(error: Exception, op: "TileOp", how: str) -> None:
    """A note on an error the body raised (its own: torch_tile's errors name op and line in their message)."""
    if isinstance(error, (TraceError, KernelError)):
        return
    body = _body_frame(op, traceback.extract_tb(error.__traceback__))
    where = f" at {body.filename}:{body.lineno}" if body is not None else ""
    error.add_note(f"(in the body of torch_tile op {op.qualname}{where}, {how})")


def warn_once(op: "TileOp", why: str) -> None:
    with _warned_lock:
        if (op.qualname, why) in _warned:
            return
        _warned.add((op.qualname, why))
    warnings.warn(
        f"torch_tile: {op.qualname}: calls like this one run the op body in Python (as torch.library.triton_op "
        f"runs it), not a native launch plan: {why}. torch_tile.explain(op) lists the op's plans; "
        f"@torch_tile.op(..., fallback=False) makes this an error.", RuntimeWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """The warning's stack level that names the caller's line: the first frame outside torch_tile and torch."""
    frame, level = sys._getframe(2), 2  # the caller of warn_once is level 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_LIBRARY_DIRS):
        frame, level = frame.f_back, level + 1
    return level


def checked_result(op: "TileOp", values: tuple, result: object) -> object:
    """``result`` as the schema returns it, or an OpDefinitionError: a fallback returns what a native plan would
    (tensors, as many as the schema declares; each whose memory is an argument's, a view of one, or an earlier
    output's is a copy, of its layout). A body may return what it wrote, as in eager, but unless the schema declares
    that return an alias of the argument, torch (torch.compile's buffers) takes it for a new tensor."""
    return _C.checked_result(op.qualname, tuple(values), result)
