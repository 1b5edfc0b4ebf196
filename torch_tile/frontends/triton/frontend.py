"""The Triton frontend as torch_tile's tracer sees it: ``@triton.jit`` kernels (and the ``@triton.autotune`` /
``@triton.heuristics`` stacks over them) launched in bodies."""

from __future__ import annotations

import warnings
from typing import Any, Optional

import triton
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import KernelInterface

from ... import _disk_cache, _process_locks
from ...trace import expr as _expr
from ..._version import __version__
from ..frontend import Frontend, register_frontend
from . import descriptors, record, tuning, tuples
from .interpret import InterpretLaunches
from .kernels import config_fingerprint, launch_config
from .writes import ANALYSIS_VERSION, written_parameters

_analysed_lock = _process_locks.lock()
# Per op: launch config id -> parameters written (None: not analysable).
_analysed: dict[str, dict[int, Optional[frozenset]]] = {}


def analysed_writes(qualname: str) -> dict[int, Optional[frozenset]]:
    """What this process has analysed of the op's launches (config id -> written parameters; a live view)."""
    with _analysed_lock:
        return _analysed.setdefault(qualname, {})


# Triton's next_power_of_2 is a constexpr function (a JITCallable that kernels call and Triton's dependency finder
# hashes): the object stays in place while bodies trace and only its class changes, to one whose call keeps
# stand-ins symbolic. A kernel's cache key, its compile and the interpreter see Triton's own function (a plain
# replacement would be an "Unsupported function referenced" to a kernel that calls it).
_next_power_of_2 = triton.next_power_of_2
_NextPowerOf2Class = type(_next_power_of_2)


class _SymbolicNextPowerOf2(_NextPowerOf2Class):
    """Triton's next_power_of_2 that returns an expression of a stand-in (``trace/expr.py``)."""

    def __call__(self, *args, **kwargs):
        if args and isinstance(args[0], _expr.SymbolicInt):
            return _expr.next_power_of_2(args[0])
        return super().__call__(*args, **kwargs)


def _install_symbolic_triton_helpers() -> None:
    _next_power_of_2.__class__ = _SymbolicNextPowerOf2
    descriptors.install_traced_post_init()


def _restore_triton_helpers() -> None:
    _next_power_of_2.__class__ = _NextPowerOf2Class
    descriptors.restore_post_init()


# Triton helpers that understand stand-ins while bodies trace: a next_power_of_2 that stays one opcode, and
# TensorDescriptor checks that leave the data checks to launch time (descriptors.py). Both behave exactly as
# Triton's for real values, so overlap with other threads is harmless.
_symbolic_triton_helpers = _process_locks.ScopedPatch(_install_symbolic_triton_helpers, _restore_triton_helpers)


class TritonFrontend(Frontend):
    name = "triton"

    def is_kernel(self, obj: Any) -> bool:
        return isinstance(obj, KernelInterface)

    def record_launch(self, tracer, kernel, grid, args, kwargs):
        if isinstance(kernel, Autotuner):
            kernel, kwargs = tuning.autotuned(tracer, kernel, grid, args, kwargs)
        step, arguments = record.record_launch(tracer, kernel, grid, args, kwargs)
        return step, (kernel, arguments)

    def tracing(self):
        return _symbolic_triton_helpers

    def interpret(self, op, kernel, grid, args, kwargs):
        return InterpretLaunches(op).launch(kernel, grid, args, kwargs)

    def written_tensors(self, qualname: str, step, written) -> Optional[list[tuple[str, Any]]]:
        kernel, arguments = written
        params = _written_parameters(qualname, kernel, step.config, arguments)
        if params is None:
            return None
        # A store through a tensor descriptor writes its base tensor.
        return [(f"kernel {kernel.fn.__name__}({tuples.leaf_name(path[0], path[1:])})",
                 descriptors.tensor_of(tuples.at(arguments, path))) for path in params]


def _written_parameters(qualname: str, kernel, config: int, arguments: dict) -> Optional[frozenset]:
    """The parameters ``kernel`` stores to for a launch configuration, as leaf paths (``(name,)``, or
    ``(name, i...)`` inside a tuple parameter); analysed once per configuration and kept in the disk cache. None
    if it cannot be analysed (remembered in this process only); an analysis that raised is reported and
    remembered nowhere: it may be transient, so the next trace analyses again."""
    known = analysed_writes(qualname)
    with _analysed_lock:
        if config in known:
            return known[config]
    key = _disk_cache.content_key("writes", ANALYSIS_VERSION, __version__, "triton", triton.__version__,
                                  config_fingerprint(launch_config(config)))
    cache = _disk_cache.active()
    hit = cache.load(key)
    if hit is not None:
        written = frozenset(tuple(path) for path in hit[0]["written"])  # JSON keeps tuples as lists
    else:
        try:
            written = written_parameters(kernel, arguments)
        except Exception as e:  # noqa: BLE001 - an analysis failure must not fail the op: the declaration is trusted
            warnings.warn(f"torch_tile: {qualname}: could not analyse which tensors {kernel.fn.__name__} writes "
                          f"({type(e).__name__}: {e}); mutates_args is trusted for this trace", RuntimeWarning,
                          stacklevel=2)
            return None
        if written is not None:  # the disk cache holds real answers only
            cache.store(key, {"written": sorted(written)})
    with _analysed_lock:
        known[config] = written
    return written


FRONTEND = register_frontend(TritonFrontend())
