"""What a kernel language implements to be a torch_tile frontend, and the registry of frontends.

A frontend is one object (a ``Frontend``) that the tracer asks, for each launch a body makes, whether the kernel
is its own (``is_kernel``), to turn the launch into a plan step (``record_launch``) and which of the op's tensors
the launch writes (``written_tensors``, for the ``mutates_args`` check); each trace enters its ``tracing()``.
Its variants are compiled by the callback it registers with the runtime (``_C.register_frontend``, its own
``register``). The tracer and the op iterate over the registered frontends and name none. Adding a frontend:
docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager, Iterator, Optional

from .._launch_mode import LaunchMode


class Frontend:
    """One kernel language (see the module's doc). Subclasses set ``name`` and implement the first two methods."""

    name = ""

    def is_kernel(self, obj: Any) -> bool:
        """Whether ``obj``, launched in a body, is a kernel of this language."""
        raise NotImplementedError

    def record_launch(self, tracer, kernel: Any, grid: Any, args: tuple, kwargs: dict) -> tuple[Any, Any]:
        """``kernel[grid](*args, **kwargs)`` made on stand-ins, as ``(step, written)``: the plan's launch step
        (``_plan.LaunchStep``, recorded with ``tracer``'s bindings) and what ``written_tensors`` needs to say what
        it writes (None: this launch is not analysed; the op's ``mutates_args`` is trusted)."""
        raise NotImplementedError

    def tracing(self) -> ContextManager:
        """Entered for the duration of every trace: the language's helpers that must understand stand-ins
        (Triton's ``next_power_of_2``); nothing by default."""
        return contextlib.nullcontext()

    def interpret(self, op: Any, kernel: Any, grid: Any, args: tuple, kwargs: dict) -> Any:
        """Runs the launch on CPU tensors (the CPU debug path; ``op``: the TileOp whose body launched it, for
        errors); a frontend without an interpreter leaves it so."""
        raise NotImplementedError(f"{kernel!r} cannot run on CPU tensors (the CPU debug path interprets "
                                  f"{', '.join(f.name for f in _FRONTENDS if f.interprets)} kernels only): call "
                                  "the op with CUDA tensors")

    @property
    def interprets(self) -> bool:
        return type(self).interpret is not Frontend.interpret

    def written_tensors(self, qualname: str, step: Any, written: Any) -> Optional[list[tuple[str, Any]]]:
        """The values the launch stores to, each with a label (``"kernel k(out)"``), from ``record_launch``'s
        ``written``; None where the kernel cannot be analysed (the declaration is trusted)."""
        return None


_FRONTENDS: list[Frontend] = []


def register_frontend(frontend: Frontend) -> Frontend:
    """Adds ``frontend`` (asked after those registered before it)."""
    if all(f.name != frontend.name for f in _FRONTENDS):
        _FRONTENDS.append(frontend)
    return frontend


def frontend_of(kernel: Any) -> Optional[Frontend]:
    """The frontend whose kernel ``kernel`` is (None: none)."""
    return next((f for f in _FRONTENDS if f.is_kernel(kernel)), None)


@contextlib.contextmanager
def frontends_tracing() -> Iterator[None]:
    """Every frontend's ``tracing()``, for one trace."""
    with contextlib.ExitStack() as stack:
        for frontend in _FRONTENDS:
            stack.enter_context(frontend.tracing())
        yield


class InterpretLaunches(LaunchMode):
    """The CPU debug path: each launch run by its frontend's interpreter (``Frontend.interpret``). ``op``: the
    TileOp whose body runs (its errors name it)."""

    def __init__(self, op: Any = None):
        self.op = op

    def launch(self, kernel, grid, args, kwargs):
        frontend = frontend_of(kernel)
        if frontend is None:
            raise NotImplementedError(f"{kernel!r} is launched like a kernel, but is not one of any frontend "
                                      f"({', '.join(frontend_names())})")
        return frontend.interpret(self.op, kernel, grid, args, kwargs)


def frontend_names() -> list[str]:
    return [f.name for f in _FRONTENDS]
