"""The Triton frontend's kernels and launch configurations, by id.

Ids are stable across processes: a kernel's id is derived from its qualified
name and Triton's ``cache_key`` (source and ``@triton.jit`` dependencies), a
launch configuration's from its fingerprint. So the specialization keys and
the serialized plans that name them mean the same thing in every process (a
bundle, or a plan written by one process and read by another)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from triton.runtime.jit import JITFunction

from ... import _C, _process_locks
from .. import UNKNOWN_CONFIG, stable_id
from .codegen_lock import source_parsing
from .tuples import TupleShape, stable

FRONTEND = "triton"


@dataclass
class LaunchConfig:
    """The static part of one launch site: everything the key's first word stands for."""

    kernel: JITFunction
    kinds: tuple[int, ...]  # BindingKind per binding: per parameter, or per leaf of a tuple parameter
    statics: dict[str, Any]  # by parameter name, or leaf name (``ptrs[1]``) inside a tuple
    options: dict[str, Any]
    tuples: dict[str, TupleShape] = field(default_factory=dict)  # the structure of each tuple parameter


@dataclass
class _Registry:
    lock: threading.Lock = field(default_factory=_process_locks.lock)
    # id(JITFunction) -> (kernel id, the JITFunction): held, so that its id() is never reused by another object
    kernel_ids: dict[int, tuple[int, JITFunction]] = field(default_factory=dict)
    kernels: dict[int, JITFunction] = field(default_factory=dict)  # kernel id -> the first kernel with it
    config_ids: dict[Any, int] = field(default_factory=dict)
    configs: dict[int, LaunchConfig] = field(default_factory=dict)


_registry = _Registry()


def cache_key(fn: JITFunction) -> str:
    """Triton's ``fn.cache_key`` (its source and ``@triton.jit`` dependencies),
    computed under ``source_parsing``: the first read parses their source."""
    with source_parsing():
        return fn.cache_key


def kernel_id(kernel: JITFunction) -> int:
    """The kernel's stable id (registered with C++ on first use)."""
    with _registry.lock:
        known = _registry.kernel_ids.get(id(kernel))
        if known is not None:
            return known[0]
    kid = stable_id("kernel", kernel.fn.__module__ + "." + kernel.fn.__qualname__, cache_key(kernel))
    with _registry.lock:
        # Same name, source and dependencies: the same binary, whichever object compiles it.
        _registry.kernels.setdefault(kid, kernel)
        _registry.kernel_ids[id(kernel)] = (kid, kernel)
        _C.register_kernel(kid, kernel.fn.__name__, FRONTEND)
        return kid


def kernel_of(kid: int) -> JITFunction:
    return _registry.kernels[kid]


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return (type(value).__name__, repr(value))


def config_id(config: LaunchConfig) -> int:
    """The configuration's stable id (the first word of its specialization keys)."""
    key = (
        kernel_id(config.kernel),
        config.kinds,
        tuple((k, _hashable(v)) for k, v in config.statics.items()),
        tuple(sorted((k, _hashable(v)) for k, v in config.options.items())),
        tuple(config.tuples.items()),
    )
    with _registry.lock:
        cid = _registry.config_ids.get(key)
        if cid is not None:
            return cid
    cid = stable_id("config", config_fingerprint(config))
    with _registry.lock:
        _registry.configs.setdefault(cid, config)
        _registry.config_ids[key] = cid
        return cid


def launch_config(cid: int) -> LaunchConfig:
    """The configuration of an id this process traced (LookupError otherwise)."""
    config = _registry.configs.get(cid)
    if config is None:
        raise LookupError("torch_tile: Triton kernel " + UNKNOWN_CONFIG.format(cid=cid))
    return config


def _stable(value: Any) -> Any:
    """A JSON value that identifies a constexpr/option value across processes."""
    if isinstance(value, JITFunction):
        return ["jit", cache_key(value)]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return [type(value).__name__, value]
    return [type(value).__name__, repr(value)]


def config_fingerprint(config: LaunchConfig) -> list:
    """What a launch configuration means, independent of this process's ids."""
    fingerprint = [
        config.kernel.fn.__module__ + "." + config.kernel.fn.__qualname__,
        cache_key(config.kernel),  # source and dependencies, as Triton hashes them
        list(config.kinds),
        sorted([k, _stable(v)] for k, v in config.statics.items()),
        sorted([k, _stable(v)] for k, v in config.options.items()),
    ]
    # Only where there are tuples: other configurations keep their ids, disk-cache entries and serialized plans.
    if config.tuples:
        fingerprint.append(sorted([k, stable(shape)] for k, shape in config.tuples.items()))
    return fingerprint
