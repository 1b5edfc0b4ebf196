"""What a kernel language implements to be a torch_tile frontend, and the registry of frontends.

A frontend is one object (a ``Frontend``) that the tracer asks, for each launch a body makes, whether the kernel
is its own (``is_kernel``), to turn the launch into a plan step (``record_launch``) and which of the op's tensors
the launch writes (``written_tensors``, for the ``mutates_args`` check). Its variants are compiled by the
callback it registers with the runtime (``_C.register_frontend``, its own ``register``). The tracer and the op
iterate over the registered frontends and name none. Adding a frontend: docs/ARCHITECTURE.md.
"""

from __future__ import annotations

from typing import Any, Optional


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


def frontend_names() -> list[str]:
    return [f.name for f in _FRONTENDS]
