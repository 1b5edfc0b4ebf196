"""``@triton.autotune`` kernels in op bodies.

Triton's autotuner picks a config per tuning key (the values of the ``key``
arguments plus the tensor dtypes). torch_tile makes the same choice once per
key while tracing: the key arguments are specialised (guards, so each key gets
its own launch plan, as each key gets its own entry in Triton's cache), the
chosen config's meta-parameters and options become part of the plan, and every
later call with that key runs natively with no tuning logic at all.

The choice is the autotuner's own: its ``run`` is called on the call's real
arguments (inputs cloned, temporary outputs), with the kernel launches it makes
going to the GPU, so everything Triton (or a library's ``Autotuner`` subclass)
does to choose is done as it does it: ``prune_configs_by`` (``perf_model``,
``top_k``, ``early_config_prune``), ``do_bench``, ``pre_hook``/``post_hook``,
``reset_to_zero``, ``restore_value``, ``cache_results``, its own cache. What it
chose (``best_config``) is then persisted in torch_tile's disk cache (keyed by
the kernel's hash, its configs, the key, the device name and the versions), so
a new process does not tune again. It never tunes during CUDA-graph capture
(it raises, telling the user to warm up) nor on fake, meta or CPU tensors
(there the first config left after Triton's pruning is used and nothing is
persisted).

A config's ``pre_hook`` runs once more at trace time on the stand-ins: there it
may set launch arguments such as tensor descriptors' block shapes (the pattern
of Triton's TMA tutorials), which enter the plan; tensor work in it becomes
plan steps.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch
import triton
from triton.compiler.errors import CompileTimeAssertionFailure
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction

from ... import _disk_cache
from ..._errors import CallError
from ...trace.expr import SymbolicInt
from ...trace.stand_ins import concrete
from ..._version import __version__
from .kernels import cache_key
from .writes import launch_specialization, launch_ttir

_chosen: dict[str, dict] = {}  # disk-cache key -> the chosen config's fields, this process
tunings_run = 0  # autotuner runs made in this process to choose a config (tests count them)
# Whether a kernel's code generates, by what Triton compiles it for (``launch_specialization``), this process:
# bounded as Triton's own kernel cache is, by the variants a program launches.
_generates: dict[tuple, bool] = {}


def base_kernel(kernel, error: Callable[[str], Exception]) -> JITFunction:
    """The @triton.jit kernel under any stack of Triton's decorators (autotuners, their subclasses, heuristics):
    each wraps the next in ``fn``, as Triton's own code reads it."""
    fn = kernel
    while not isinstance(fn, JITFunction):
        inner = getattr(fn, "fn", None)
        if inner is None or inner is fn:
            raise error(f"{type(kernel).__name__} over {type(fn).__name__}: torch_tile launches @triton.jit kernels "
                        "under Triton's decorators (@triton.autotune, @triton.heuristics) only")
        fn = inner
    return fn


def with_heuristics(tuner: Autotuner, args: tuple, kwargs: dict) -> dict:
    """The launch kwargs after the @triton.heuristics between ``tuner`` and its
    kernel, computed as Triton's Heuristics.run does (outermost first, each
    seeing the arguments, the chosen config and the values before it)."""
    fn, kwargs = tuner.fn, dict(kwargs)
    while not isinstance(fn, JITFunction):
        if isinstance(fn, Heuristics):
            for name, heuristic in fn.values.items():
                kwargs[name] = heuristic({**dict(zip(fn.arg_names, args)), **kwargs})
        fn = fn.fn
    return kwargs


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


def first_candidate(tuner: Autotuner, named: dict[str, Any], kwargs: dict) -> triton.Config:
    """The config used where nothing can be timed: the first one Triton's pruning leaves (its perf model may need
    a GPU: then the first one ``early_config_prune`` leaves, or the first config) whose code generates. Triton's
    benchmark gives a config whose ``tl.static_assert`` fails no time, so its autotuner never picks one while
    another is left; where every one fails, the first is used and its launch reports the failure."""
    if len(tuner.configs) == 1:
        return tuner.configs[0]
    candidates = _pruned(tuner, named, kwargs)
    if len(candidates) > 1:
        for config in candidates:
            if _generates_code(tuner, named, kwargs, config):
                return config
    return candidates[0]


def _pruned(tuner: Autotuner, named: dict[str, Any], kwargs: dict) -> list[triton.Config]:
    tuner.nargs = {k: concrete(v) for k, v in named.items()}
    values = {k: concrete(v) for k, v in kwargs.items()}
    try:
        return list(tuner.prune_configs(values))
    except Exception:  # noqa: BLE001 - a perf model that needs a GPU: the early prune alone, as Triton's first step
        prune = getattr(tuner, "early_config_prune", None)
        return list(prune(tuner.configs, tuner.nargs, **values)) if prune else list(tuner.configs)
    finally:
        tuner.nargs = None


def _generates_code(tuner: Autotuner, named: dict[str, Any], kwargs: dict, config: triton.Config) -> bool:
    """Whether the kernel's code generates with ``config`` (and the heuristics under the tuner), as its launch
    would compile it. Only a failing compile-time assertion counts against it: any other failure is left to the
    launch, which reports it."""
    jit = base_kernel(tuner, ValueError)
    launch = with_heuristics(tuner, (), {**named, **kwargs, **config.all_kwargs()})
    arguments = {p.name: launch.get(p.name, p.default) for p in jit.params}
    try:
        key = launch_specialization(jit, arguments)
    except Exception:  # noqa: BLE001 - not the autotuner's to skip: the launch meets it and says so
        return True
    generates = _generates.get(key)
    if generates is None:
        try:
            launch_ttir(jit, arguments)
            generates = True
        except CompileTimeAssertionFailure:
            generates = False
        except Exception:  # noqa: BLE001 - as above
            generates = True
        _generates[key] = generates
    return generates


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device)


def capturing() -> bool:
    """Whether the current stream is capturing a CUDA graph."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _cache_key(tuner: Autotuner, key: tuple, device: torch.device) -> str:
    """As Triton's own autotune cache: the kernel, its configs, the key; plus the autotuner's class (a library's
    subclass may choose otherwise) and the device."""
    configs = [str(c) for c in tuner.configs]
    return _disk_cache.content_key("autotune", 2, __version__, "triton", triton.__version__,
                                   cache_key(base_kernel(tuner, ValueError)), type(tuner).__qualname__, configs,
                                   [repr(k) for k in key], device_name(device))


def _fields(config: triton.Config) -> dict:
    """A config as Triton's own disk cache keeps it (``Config(**fields)`` rebuilds it)."""
    return {k: v for k, v in vars(config).items() if k != "pre_hook"}


def choose(tuner: Autotuner, named: dict[str, Any], kwargs: dict, device: torch.device,
           tune: Optional[Callable[[], triton.Config]], error: Callable[[str], Exception]) -> triton.Config:
    """The config for this call's tuning key. ``tune()`` runs the autotuner on the call's real arguments and
    returns its choice (None: nothing can be timed here, e.g. fake or CPU tensors). The tuner's ``best_config`` is
    left on it, as Triton's run leaves it: libraries read it after a launch (FlagGems' libentry)."""
    config = _choice(tuner, named, kwargs, device, tune, error)
    tuner.best_config = config
    return config


def _choice(tuner: Autotuner, named: dict[str, Any], kwargs: dict, device: torch.device,
            tune: Optional[Callable[[], triton.Config]], error: Callable[[str], Exception]) -> triton.Config:
    global tunings_run
    key = tuning_key(tuner, named)
    if len(tuner.configs) == 1:
        return tuner.configs[0]
    if tune is None:
        return first_candidate(tuner, named, kwargs)
    cache_key = _cache_key(tuner, key, device)
    fields = _chosen.get(cache_key)
    if fields is None:
        hit = _disk_cache.active().load(cache_key)
        fields = hit[0]["config"] if hit is not None else None
    if fields is not None:
        _chosen[cache_key] = fields
        return triton.Config(**fields)
    name = base_kernel(tuner, error).fn.__name__
    if capturing():
        raise error(f"autotuning {name} for key {key} needs timing runs, which cannot happen during CUDA-graph "
                    "capture: call the op once with these sizes before capturing (the choice is then kept, "
                    "also on disk for later processes)", kind=CallError)
    try:
        config = tune()
    except Exception as e:  # noqa: BLE001 - reported with the kernel's name; the call then runs as the body would
        raise error(f"autotuning {name} for key {key} failed: {type(e).__name__}: {e}") from e
    tunings_run += 1
    if config.pre_hook is None:  # as Triton's cache: a hook cannot be persisted, so such a choice is not kept
        _chosen[cache_key] = _fields(config)
        _disk_cache.active().store(cache_key, {"config": _fields(config), "key": [repr(k) for k in key]})
    return config
