"""Triton's own launch functions while op bodies run: ``JITFunction.run``, ``Autotuner.run`` and a compiled
kernel's launch go to the thread's launch mode (``_launch_mode``), which turns this routing on while at least one
body runs in the process; outside bodies Triton is untouched. Meanwhile the launches Triton runs itself (in any
thread) hold the code-generation lock shared (``codegen_lock``)."""

from __future__ import annotations

import contextlib
from typing import Any, Optional

import torch
from torch.overrides import _pop_mode_temporarily
from triton.compiler.compiler import CompiledKernel
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction
from triton.tools.tensor_descriptor import TensorDescriptor

from ..._launch_mode import LaunchMode, add_routing, current_mode
from ...trace.stand_ins import TensorProxy, concrete
from . import tuples
from .autotune import base_kernel
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
            return KernelHandle.of_launch(self, args, kwargs, compiled)
        launched = mode.launch(self, grid, args, kwargs)
        return KernelHandle.of_launch(self, args, kwargs) if launched is None else launched

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
    """Routes (or restores) ``JITFunction.run``, ``Autotuner.run`` and a compiled kernel's launch."""
    for cls, run in (_routed_runs if on else _original_runs).items():
        cls.run = run
    CompiledKernel.__getitem__ = _routed_compiled_getitem if on else _original_compiled_getitem


add_routing(route)


class KernelHandle:
    """What a launch (``kernel[grid](...)``) or ``kernel.warmup(...)`` in a body returns, in place of Triton's
    ``CompiledKernel``. Libraries keep that object to launch again (``handle[grid](*args)``, every parameter
    positionally, constexprs included, as a compiled kernel takes them; FlagGems' ``libentry`` caches it per
    specialization): such a launch goes to the launch mode of that moment, or to Triton itself outside bodies, with
    the first launch's options and the config its autotuner chose. Attributes (``n_regs``, ``metadata``...) are
    the compiled kernel's, where one was compiled (``warmup``). It keeps no tensor: a launch passes them again."""

    def __init__(self, kernel: JITFunction, options: dict, compiled: Any = None):
        self._kernel, self._options, self._compiled = kernel, options, compiled

    @classmethod
    def of_launch(cls, kernel: JITFunction | Autotuner, args: tuple, kwargs: dict,
                  compiled: Any = None) -> "KernelHandle":
        # The constexprs given by position, and every keyword but tensors (a launch passes them again); a size's
        # stand-in kept here is replaced by its value when the trace ends (trace/escapes.py), which is what the
        # compiled kernel would have fixed.
        jit = base_kernel(kernel, TypeError)
        options = {p.name: a for p, a in zip(jit.params, args) if p.is_constexpr}
        options.update((k, v) for k, v in kwargs.items() if not _holds_tensor(v))
        config = getattr(kernel, "best_config", None) if isinstance(kernel, Autotuner) else None
        if config is not None:
            options.update(config.all_kwargs())
        return cls(jit, options, compiled)

    def __getitem__(self, grid):
        def launch(*args, stream=None):
            if stream is not None:
                raise TypeError(f"{self._kernel.fn.__name__}: a kernel first launched in a torch_tile op body runs "
                                "on the current stream when launched again; pass no stream=")
            # Triton up to 3.6 passes a compiled kernel every parameter, later versions the non-constexpr ones.
            params = self._kernel.params
            runtime = [p.name for p in params if not p.is_constexpr]
            names = runtime if len(args) == len(runtime) < len(params) else [p.name for p in params]
            named = dict(zip(names, args))
            kwargs = {**{k: v for k, v in self._options.items() if k not in named}, **named}
            mode = current_mode()
            if mode is None:
                return run_unrouted(self._kernel, grid, (), kwargs)
            return mode.launch(self._kernel, grid, (), kwargs)
        return launch

    def __getattr__(self, name: str):
        if name.startswith("__") or self.__dict__.get("_compiled") is None:
            raise AttributeError(f"{type(self).__name__} of {self._kernel.fn.__name__} has no attribute {name!r}: "
                                 "inside a torch_tile op body, a launch compiles nothing yet; "
                                 "kernel.warmup(...) gives the compiled kernel's metadata")
        return getattr(self._compiled, name)


def _holds_tensor(value: Any) -> bool:
    return any(isinstance(leaf, (TensorProxy, torch.Tensor, TensorDescriptor)) for _, leaf in tuples.leaves(value))


def _routed_compiled_launch(original_getitem):
    """``CompiledKernel.__getitem__`` while bodies run: a compiled kernel a library kept from an earlier launch
    (outside torch_tile, or a run of the body by Triton itself), launched again inside a body, goes to the body's
    launch mode as a launch of its @triton.jit function with the options it was compiled with."""
    def getitem(self, grid):
        if current_mode() is None:
            return original_getitem(self, grid)
        src = getattr(self, "src", None)
        kernel = getattr(src, "fn", None)
        if not isinstance(kernel, JITFunction):
            raise TypeError(f"a compiled kernel ({getattr(self, 'name', '?')}) not made from a @triton.jit "
                            "function is launched in a torch_tile op body; launch the @triton.jit kernel itself")
        metadata = self.metadata
        options = {k: getattr(metadata, k) for k in _COMPILED_OPTIONS if getattr(metadata, k, None) is not None}
        # Its constexprs, which Triton 3.7+ does not pass again (ASTSource.constants: {(index,): value}).
        params = kernel.params
        options.update((params[key[0]].name, value) for key, value in getattr(src, "constants", {}).items()
                       if len(key) == 1 and key[0] < len(params) and params[key[0]].is_constexpr)
        return KernelHandle(kernel, options)[grid]
    return getitem


_COMPILED_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_original_compiled_getitem = CompiledKernel.__getitem__
_routed_compiled_getitem = _routed_compiled_launch(_original_compiled_getitem)


class TuningLaunches(LaunchMode):
    """An autotuner run on real arguments to learn its choice: autotuners (a library's subclasses too) run as
    Triton runs them, and the kernel launches they make go to ``leaves`` (None: the GPU, by Triton's launcher)."""

    def __init__(self, leaves: Optional[LaunchMode] = None):
        self.leaves = leaves

    def launch(self, kernel, grid, args, kwargs):
        if isinstance(kernel, Autotuner) or self.leaves is None:
            return run_unrouted(kernel, grid, args, kwargs)
        return self.leaves.launch(kernel, grid, args, kwargs)
