"""Where a Triton launch made inside an op body goes.

Op bodies call kernels the usual way, ``kernel[grid](...)``. While torch_tile
runs a body, the launch is routed by the active mode of this thread: recorded
into a launch plan (tracing), skipped (fake tensors / meta), or executed by
Triton's interpreter (the CPU debug path). Outside a body Triton is untouched:
``JITFunction.run`` is wrapped only while at least one body runs; meanwhile the
launches Triton runs itself (in any thread) hold the code-generation lock shared.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator, Optional

from torch._library.triton import set_wrap_triton_enabled
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

from . import _process_locks
from ._codegen_lock import code_generation


class LaunchMode:
    """Handles ``kernel[grid](*args, **kwargs)`` inside an op body (``kernel``:
    a ``@triton.jit`` function or a ``@triton.autotune`` over one)."""

    def launch(self, kernel: JITFunction | Autotuner, grid: Any, args: tuple, kwargs: dict) -> Any:
        raise NotImplementedError

    def warmup_arguments(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """What ``kernel.warmup(...)`` in a body compiles for (it only reads the
        compiled kernel's metadata, e.g. ``n_regs``); the arguments as given by default."""
        return args, kwargs

    def warmed_up(self, kernel: JITFunction, compiled: Any, kwargs: dict) -> Any:
        """What ``kernel.warmup(..., **kwargs)`` returns in a body; Triton's compiled kernel by default."""
        return compiled


class WarmedUpKernel:
    """``kernel.warmup(...)``'s result in a traced body: the compiled kernel's
    metadata (``n_regs``, ``metadata.shared``...), and ``[grid](*args)``
    recorded as a launch of ``kernel`` with the warmup's constexprs and options
    (as the Triton tutorials launch it)."""

    def __init__(self, mode: LaunchMode, kernel: JITFunction, compiled: Any, kwargs: dict):
        self._mode, self._kernel, self._compiled, self._kwargs = mode, kernel, compiled, kwargs

    def __getitem__(self, grid):
        def launch(*args):
            # A compiled kernel takes its parameters positionally, constexprs included (the tutorials pass them).
            given = set(getattr(self._kernel, "arg_names", ())[:len(args)])
            return self._mode.launch(self._kernel, grid, args, {k: v for k, v in self._kwargs.items()
                                                                 if k not in given})
        return launch

    def __getattr__(self, name: str):
        return getattr(self._compiled, name)


class TuningLaunches(LaunchMode):
    """An autotuner run on real arguments to learn its choice: autotuners (a library's subclasses too) run as
    Triton runs them, and the kernel launches they make go to ``leaves`` (None: the GPU, by Triton's launcher)."""

    def __init__(self, leaves: Optional[LaunchMode] = None):
        self.leaves = leaves

    def launch(self, kernel, grid, args, kwargs):
        if isinstance(kernel, Autotuner) or self.leaves is None:
            return run_unrouted(kernel, grid, args, kwargs)
        return self.leaves.launch(kernel, grid, args, kwargs)


class SkipLaunches(LaunchMode):
    """Fake/meta execution: shapes only, no kernel runs."""

    def launch(self, kernel, grid, args, kwargs):
        return None


_local = threading.local()  # .mode; .depth: this thread's share of _patch_depth
_patch_lock = _process_locks.lock()
_patch_depth = 0  # launch_mode scopes open in all threads: Triton is patched while there is one
_original_runs = {JITFunction: JITFunction.run, Autotuner: Autotuner.run}


def _router(cls):
    original = _original_runs[cls]
    # A launch Triton runs itself may compile; while bodies run, an interpreted
    # launch in another thread may have Triton patched (see _codegen_lock).
    # The autotuner's runs reach JITFunction.run, so only that one takes the lock.
    codegen = code_generation if cls is JITFunction else contextlib.nullcontext

    def routed_run(self, *args, grid, warmup=False, **kwargs):
        mode: Optional[LaunchMode] = getattr(_local, "mode", None)
        if mode is None or warmup:
            if mode is None:
                with codegen():
                    return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            real_args, real_kwargs = mode.warmup_arguments(args, kwargs)
            with codegen():
                compiled = original(self, *real_args, grid=grid, warmup=warmup, **real_kwargs)
            return mode.warmed_up(self, compiled, kwargs)
        return mode.launch(self, grid, args, kwargs)

    return routed_run


_routed_runs = {cls: _router(cls) for cls in _original_runs}


def run_unrouted(kernel: JITFunction | Autotuner, grid: Any, args: tuple, kwargs: dict) -> Any:
    """``kernel[grid](*args, **kwargs)`` as Triton runs it, whatever this thread's mode."""
    cls = JITFunction if isinstance(kernel, JITFunction) else Autotuner
    with code_generation() if cls is JITFunction else contextlib.nullcontext():
        return _original_runs[cls](kernel, *args, grid=grid, warmup=False, **kwargs)
_cutile_original: Optional[Any] = None  # cuda.tile.launch while bodies run, if cuda.tile is imported


def _cutile_router(original):
    """``ct.launch(stream, grid, kernel, args)`` as cuTile users write it: to this thread's mode in a body."""
    def launch(stream, grid, kernel, kernel_args, /, **options):
        mode: Optional[LaunchMode] = getattr(_local, "mode", None)
        if mode is None:
            return original(stream, grid, kernel, kernel_args, **options)
        return mode.launch(kernel, grid, kernel_args, {"stream": stream, **options})
    return launch


def _route_cutile(on: bool) -> None:
    """Routes ``cuda.tile.launch`` (only where the program imported cuda.tile: nothing is imported here)."""
    global _cutile_original
    ct = sys.modules.get("cuda.tile")
    if on and ct is not None and _cutile_original is None:
        _cutile_original = ct.launch
        ct.launch = _cutile_router(_cutile_original)
    elif not on and _cutile_original is not None:
        ct.launch = _cutile_original
        _cutile_original = None


def _unpatch() -> None:
    for cls, run in _original_runs.items():
        cls.run = run
    _route_cutile(False)


@contextlib.contextmanager
def launch_mode(mode: LaunchMode) -> Iterator[LaunchMode]:
    """Routes this thread's Triton launches (and cuTile's ``ct.launch``) to ``mode`` for the duration.
    Launches written for ``torch.library.triton_op`` (``wrap_triton(kernel)[grid](...)``) are plain launches
    here, as in triton_op's own eager path."""
    global _patch_depth
    with _patch_lock:
        if _patch_depth == 0:
            for cls, run in _routed_runs.items():
                cls.run = run
        _route_cutile(True)  # on every entry: a body may be the first to import cuda.tile
        _patch_depth += 1
    _local.depth = getattr(_local, "depth", 0) + 1
    previous = getattr(_local, "mode", None)
    _local.mode = mode
    try:
        with set_wrap_triton_enabled(False):
            yield mode
    finally:
        _local.mode = previous
        _local.depth -= 1
        with _patch_lock:
            _patch_depth -= 1
            if _patch_depth == 0:
                _unpatch()


@_process_locks.after_fork_in_child
def _forget_other_threads() -> None:
    """In a forked child only the forking thread's scopes remain open: Triton stays patched only for them."""
    global _patch_depth
    _patch_depth = getattr(_local, "depth", 0)
    if _patch_depth == 0:
        _unpatch()


def current_mode() -> Optional[LaunchMode]:
    """The launch mode of this thread (None outside op bodies): where frontends other than Triton's, whose
    launches are not ``JITFunction.run``, send a launch made in a body."""
    return getattr(_local, "mode", None)


class DirectLaunches:
    """Launches made inside run on the GPU as usual, by their own launchers (autotuning's timing runs during a
    trace; a body run per call where its plan is a fallback, ``wrap_triton`` launches included). A class, not a
    generator: a fallback call enters it on every call."""

    __slots__ = ("_mode", "_wrap_triton")

    def __enter__(self) -> None:
        self._mode = getattr(_local, "mode", None)
        _local.mode = None
        self._wrap_triton = set_wrap_triton_enabled(False)
        self._wrap_triton.__enter__()

    def __exit__(self, *exc) -> None:
        try:
            self._wrap_triton.__exit__(*exc)
        finally:
            _local.mode = self._mode
