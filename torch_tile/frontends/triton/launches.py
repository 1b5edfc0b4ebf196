"""Triton's own launch functions while op bodies run: ``JITFunction.run`` and ``Autotuner.run`` go to the
thread's launch mode (``_launch_mode``), which turns this routing on while at least one body runs in the
process; outside bodies Triton is untouched. Meanwhile the launches Triton runs itself (in any thread) hold the
code-generation lock shared (``codegen_lock``)."""

from __future__ import annotations

import contextlib
from typing import Any, Optional

import torch
from torch.overrides import _pop_mode_temporarily
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

from ..._launch_mode import LaunchMode, add_routing, current_mode
from ...trace.stand_ins import TensorProxy, concrete
from . import tuples
from .codegen_lock import code_generation

_original_runs = {JITFunction: JITFunction.run, Autotuner: Autotuner.run}


def _router(cls):
    original = _original_runs[cls]
    # A launch Triton runs itself may compile; while bodies run, an interpreted
    # launch in another thread may have Triton patched (see codegen_lock).
    # The autotuner's runs reach JITFunction.run, so only that one takes the lock.
    codegen = code_generation if cls is JITFunction else contextlib.nullcontext

    def routed_run(self, *args, grid, warmup=False, **kwargs):
        mode: Optional[LaunchMode] = current_mode()
        if mode is None or (warmup and not mode.records):
            with codegen():
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        if warmup:
            real_args, real_kwargs = _warmup_arguments(mode.device, args, kwargs)
            with codegen():
                compiled = original(self, *real_args, grid=grid, warmup=True, **real_kwargs)
            return WarmedUpKernel(mode, self, compiled, kwargs)
        return mode.launch(self, grid, args, kwargs)

    return routed_run


_routed_runs = {cls: _router(cls) for cls in _original_runs}


def run_unrouted(kernel: JITFunction | Autotuner, grid: Any, args: tuple, kwargs: dict) -> Any:
    """``kernel[grid](*args, **kwargs)`` as Triton runs it, whatever this thread's mode."""
    cls = JITFunction if isinstance(kernel, JITFunction) else Autotuner
    with code_generation() if cls is JITFunction else contextlib.nullcontext():
        return _original_runs[cls](kernel, *args, grid=grid, warmup=False, **kwargs)


def _warmup_arguments(device, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``kernel.warmup(...)`` in a traced body (the Triton tutorials read ``n_regs`` and shared memory from it to
    size a persistent grid): compiled for this call's values, with empty tensors of the stand-ins' layouts. What
    it returns only tunes the launch; no guard is taken."""
    def real(value):
        if isinstance(value, tuple):
            return tuples.map_leaves(real, value)
        if isinstance(value, TensorProxy):
            m = value._meta
            with _pop_mode_temporarily(), torch._C.DisableTorchFunction():
                return torch.empty_strided(m.sizes, m.strides, dtype=m.dtype, device=device)
        return concrete(value)

    return tuple(real(a) for a in args), {k: real(v) for k, v in kwargs.items()}


def route(on: bool) -> None:
    """Routes (or restores) ``JITFunction.run`` and ``Autotuner.run``."""
    for cls, run in (_routed_runs if on else _original_runs).items():
        cls.run = run


add_routing(route)


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
