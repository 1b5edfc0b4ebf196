"""``@triton.autotune`` kernels in op bodies.

Triton's autotuner picks a config per tuning key (the values of the ``key``
arguments plus the tensor dtypes) by timing every config. torch_tile makes the
same choice once per key while tracing: the key arguments are specialised
(guards, so each key gets its own launch plan, as each key gets its own entry
in Triton's cache), the chosen config's meta-parameters and options become part
of the plan, and every later call with that key runs natively with no tuning
logic at all.

The choice is persisted in the disk cache (keyed by the kernel's hash, its
configs, the key, the device name and the versions), so a new process does not
tune again. Tuning times each surviving config (after ``prune_configs_by``)
with CUDA events on the current stream, L2 flushed before each run, on
temporary outputs and clones of the arguments the kernel writes
(``reset_to_zero`` arguments are zeroed before each run, ``restore_value``
ones restored after); configs that fail to compile or exceed the device's
resources are skipped and reported. It never tunes during CUDA-graph capture
(it raises, telling the user to warm up) nor on fake, meta or CPU tensors
(there the first surviving config is used and nothing is persisted).

A config's ``pre_hook`` runs before each of its timing runs on the real
arguments, and once more at trace time on the stand-ins: there it may set
launch arguments such as tensor descriptors' block shapes (the pattern of
Triton's TMA tutorials), which enter the plan; tensor work in it is refused.
"""

from __future__ import annotations

import dataclasses
import statistics
import warnings
from typing import Any, Callable, Optional

import torch
import triton
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction
from triton.tools.tensor_descriptor import TensorDescriptor

from ... import _disk_cache
from ..._expr import SymbolicInt
from ..._stand_ins import concrete
from ..._version import __version__
from .kernels import cache_key
from .tuples import map_leaves

_chosen: dict[str, int] = {}  # disk-cache key -> config index, this process
benchmarks_run = 0  # tunings performed in this process (tests count them)

_L2_FLUSH_BYTES = 256 << 20


def base_kernel(tuner: Autotuner, error: Callable[[str], Exception]) -> JITFunction:
    """The @triton.jit kernel under an autotuner (through any @triton.heuristics between them)."""
    fn = tuner.fn
    while isinstance(fn, Heuristics):
        fn = fn.fn
    if not isinstance(fn, JITFunction):
        raise error(f"@triton.autotune over {type(fn).__name__} is not supported in op bodies; put the autotuner "
                    "on a @triton.jit kernel (or on @triton.heuristics over one)")
    return fn


def with_heuristics(tuner: Autotuner, args: tuple, kwargs: dict) -> dict:
    """The launch kwargs after the @triton.heuristics between ``tuner`` and its
    kernel, computed as Triton's Heuristics.run does (outermost first, each
    seeing the arguments, the chosen config and the values before it)."""
    fn, kwargs = tuner.fn, dict(kwargs)
    while isinstance(fn, Heuristics):
        for name, heuristic in fn.values.items():
            kwargs[name] = heuristic({**dict(zip(fn.arg_names, args)), **kwargs})
        fn = fn.fn
    return kwargs


def _config_text(config: triton.Config) -> str:
    return str(config)


def tuning_key(tuner: Autotuner, named: dict[str, Any]) -> tuple:
    """Triton's tuning key: the ``key`` arguments' values, then the tensor
    dtypes. Symbolic key values are specialised (a guard per value)."""
    values = []
    for name in tuner.keys:
        if name in named:
            v = named[name]
            values.append(v.specialize() if isinstance(v, SymbolicInt) else v)
    values += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(values)


def candidates(tuner: Autotuner, named: dict[str, Any], kwargs: dict) -> list[triton.Config]:
    """The configs left after the kernel's ``prune_configs_by`` (Triton's own pruning)."""
    if len(tuner.configs) == 1:
        return list(tuner.configs)
    tuner.nargs = {k: concrete(v) for k, v in named.items()}
    try:
        return list(tuner.prune_configs({k: concrete(v) for k, v in kwargs.items()}))
    finally:
        tuner.nargs = None


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device)


def capturing() -> bool:
    """Whether the current stream is capturing a CUDA graph."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _cache_key(tuner: Autotuner, configs: list[triton.Config], key: tuple, device: torch.device) -> str:
    """As Triton's own autotune cache: the kernel, the configs left after pruning, the key; plus the device."""
    jit = tuner.fn
    return _disk_cache.content_key("autotune", __version__, "triton", triton.__version__, cache_key(jit),
                                   [_config_text(c) for c in configs], [repr(k) for k in key], device_name(device))


def choose(tuner: Autotuner, named: dict[str, Any], kwargs: dict, device: torch.device,
           measure: Optional[Callable[[list[triton.Config]], list[float]]], error: Callable[[str], Exception]
           ) -> triton.Config:
    """The config for this call's tuning key. ``measure`` times configs (None:
    no timing possible here, e.g. fake or CPU tensors)."""
    global benchmarks_run
    key = tuning_key(tuner, named)
    configs = candidates(tuner, named, kwargs)
    if len(configs) == 1 or measure is None:
        return configs[0]
    cache_key = _cache_key(tuner, configs, key, device)
    index = _chosen.get(cache_key)
    if index is None:
        hit = _disk_cache.active().load(cache_key)
        index = hit[0]["config_index"] if hit is not None else None
    if index is None:
        name = tuner.fn.fn.__name__
        if capturing():
            raise error(f"autotuning {name} for key {key} needs timing runs, which cannot happen during CUDA-graph "
                        "capture: call the op once with these sizes before capturing (the choice is then kept, "
                        "also on disk for later processes)")
        timings = measure(configs)
        benchmarks_run += 1
        failed = [str(c) for c, t in zip(configs, timings) if t == float("inf")]
        if len(failed) == len(configs):
            raise error(f"autotuning {name}: every config failed to compile or exceeded the device's resources")
        if failed:
            warnings.warn(f"torch_tile: autotuning {name} skipped configs that failed: {failed}", RuntimeWarning,
                          stacklevel=2)
        best = min(range(len(configs)), key=lambda i: timings[i])
        index = tuner.configs.index(configs[best])
        _disk_cache.active().store(cache_key, {"config_index": index, "config": str(configs[best]),
                                               "timings_ms": [t if t != float("inf") else None for t in timings]})
    _chosen[cache_key] = index
    return tuner.configs[index]


def _time_ms(run: Callable[[], None], reps: int = 10) -> float:
    """Median of ``reps`` timed runs (CUDA events on the current stream), L2 flushed before each."""
    flush = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def measure_with(tuner: Autotuner, grid: Any, args: list, kwargs: dict, written: set[str]):
    """A ``measure`` function for ``choose`` over real CUDA arguments (``args``
    bound positionally to the kernel's parameters): the tensors of the
    ``written`` parameters (inside tuples too) are cloned so the caller's data
    is untouched."""
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources

    def clone(value):
        if isinstance(value, torch.Tensor):
            return value.clone()
        if isinstance(value, TensorDescriptor):
            return dataclasses.replace(value, base=value.base.clone())
        return value

    jit = tuner.fn
    names = jit.arg_names
    real = [map_leaves(clone, a) if name in written else a for name, a in zip(names, args)]
    named = dict(zip(names, real))

    def timed(config: triton.Config) -> float:
        meta = {**kwargs, **config.all_kwargs()}
        # A grid lambda may close over the body's sizes: read them without guards.
        launch_grid = tuple(concrete(g) for g in (grid({**named, **meta}) if callable(grid) else grid))
        saved = {n: named[n].clone() for n in tuner.restore_value if isinstance(named.get(n), torch.Tensor)}

        def run():
            for n in tuner.reset_to_zero:
                if isinstance(named.get(n), torch.Tensor):
                    named[n].zero_()
            if config.pre_hook is not None:
                config.pre_hook({**named, **meta})
            jit[launch_grid](*real, **meta)
            for n, value in saved.items():
                named[n].copy_(value)

        try:
            return _time_ms(run)
        except (OutOfResources, CompilationError, RuntimeError) as e:
            if isinstance(e, RuntimeError) and "out of resource" not in str(e).lower():
                raise
            return float("inf")

    return lambda configs: [timed(c) for c in configs]
