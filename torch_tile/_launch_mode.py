"""Where a kernel launch made inside an op body goes.

Op bodies call kernels the usual way (``kernel[grid](...)``, ``ct.launch(...)``). While torch_tile runs a body,
the launch goes to the active mode of this thread: recorded into a launch plan (tracing), skipped (fake tensors
/ meta), or executed by Triton's interpreter (the CPU debug path). Frontends whose launches are calls of the
language's own functions (Triton's ``JITFunction.run``, cuTile's ``ct.launch``) register a routing that this
module turns on while at least one body runs in the process (and off after: outside bodies those languages are
untouched); a kernel object of torch_tile's own (``CudaKernel``) asks ``current_mode()`` itself.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Callable, Iterator, Optional

from torch._library import triton as torch_triton

from . import _process_locks


class LaunchMode:
    """Handles ``kernel[grid](*args, **kwargs)`` inside an op body (``kernel``: a kernel of any frontend).
    ``records``: the launches become plan steps on stand-ins (a trace), so what a body asks of a compiled kernel
    (Triton's ``kernel.warmup(...)``) is answered for the call's values."""

    records = False

    def launch(self, kernel: Any, grid: Any, args: tuple, kwargs: dict) -> Any:
        raise NotImplementedError


class SkipLaunches(LaunchMode):
    """Fake/meta execution: shapes only, no kernel runs."""

    def launch(self, kernel, grid, args, kwargs):
        return None


_local = threading.local()  # .mode; .depth: this thread's share of _patch_depth
_patch_lock = _process_locks.lock()
_patch_depth = 0  # launch_mode scopes open in all threads: the routings are on while there is one
_routings: list[Callable[[bool], None]] = []


def add_routing(route: Callable[[bool], None]) -> None:
    """``route(True)`` sends a language's own launch function to ``current_mode()`` (called on every scope's entry:
    idempotent; a module the program imports late is routed from then on), ``route(False)`` restores it."""
    with _patch_lock:
        _routings.append(route)
        if _patch_depth:
            route(True)


def attribute_routing(module: str, owner: Callable[[Any], Any], attribute: str,
                      router: Callable[[Any], Any]) -> Callable[[bool], None]:
    """A routing for ``add_routing``: while bodies run, ``owner(sys.modules[module]).<attribute>`` (a language's
    launch function, or its kernel class's ``__call__``) is ``router(original)``; only where the program imported
    ``module`` (nothing is imported here; a module imported late is routed from the next body on)."""
    original = None

    def route(on: bool) -> None:
        nonlocal original
        imported = sys.modules.get(module)
        if imported is None:
            return
        target = owner(imported)
        if on and original is None:
            original = getattr(target, attribute)
            setattr(target, attribute, router(original))
        elif not on and original is not None:
            setattr(target, attribute, original)
            original = None

    return route


def _route(on: bool) -> None:
    for route in _routings:
        route(on)


@contextlib.contextmanager
def launch_mode(mode: LaunchMode) -> Iterator[LaunchMode]:
    """Routes this thread's launches to ``mode`` for the duration. Launches written for
    ``torch.library.triton_op`` (``wrap_triton(kernel)[grid](...)``) are plain launches here, as in triton_op's
    own eager path."""
    global _patch_depth
    with _patch_lock:
        _route(True)
        _patch_depth += 1
    _local.depth = getattr(_local, "depth", 0) + 1
    previous = getattr(_local, "mode", None)
    _local.mode = mode
    try:
        with torch_triton.set_wrap_triton_enabled(False):
            yield mode
    finally:
        _local.mode = previous
        _local.depth -= 1
        with _patch_lock:
            _patch_depth -= 1
            if _patch_depth == 0:
                _route(False)


@_process_locks.after_fork_in_child
def _forget_other_threads() -> None:
    """In a forked child only the forking thread's scopes remain open: the routings stay on only for them."""
    global _patch_depth
    _patch_depth = getattr(_local, "depth", 0)
    if _patch_depth == 0:
        _route(False)


def current_mode() -> Optional[LaunchMode]:
    """The launch mode of this thread (None outside op bodies)."""
    return getattr(_local, "mode", None)


class DirectLaunches:
    """Launches made inside run on the GPU as usual, by their own launchers (autotuning's timing runs during a
    trace; a body run per call where its plan is a fallback, ``wrap_triton`` launches included). A class, not a
    generator: a fallback call enters it on every call."""

    __slots__ = ("_mode", "_wrap_triton")

    def __enter__(self) -> None:
        self._mode = getattr(_local, "mode", None)
        _local.mode = None
        # As torch's set_wrap_triton_enabled(False) does, without making a generator on every fallback call.
        self._wrap_triton = torch_triton.is_wrap_triton_enabled()
        torch_triton.wrap_triton_enabled.value = False

    def __exit__(self, *exc) -> None:
        torch_triton.wrap_triton_enabled.value = self._wrap_triton
        _local.mode = self._mode
