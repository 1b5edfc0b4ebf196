"""The Triton frontend's kernels and launch configurations, by id.

Ids are stable across processes: a kernel's id is derived from its qualified
name and Triton's ``cache_key`` (source and ``@triton.jit`` dependencies), a
launch configuration's from its fingerprint. So the specialization keys and
the serialized plans that name them mean the same thing in every process (a
bundle, or a plan written by one process and read by another)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from triton.runtime.jit import JITFunction

from ..kernel_registry import UNKNOWN_CONFIG, KernelRegistry, stable_id
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


REGISTRY = KernelRegistry(FRONTEND)


def cache_key(fn: JITFunction) -> str:
    """Triton's ``fn.cache_key`` (its source and ``@triton.jit`` dependencies),
    computed under ``source_parsing``: the first read parses their source."""
    with source_parsing():
        return fn.cache_key


def kernel_id(kernel: JITFunction) -> int:
    """The kernel's stable id (registered with C++ on first use). Same name, source and dependencies: the same
    binary, whichever object compiles it."""
    return REGISTRY.kernel_id(kernel, lambda: stable_id("kernel", kernel.fn.__module__ + "." + kernel.fn.__qualname__,
                                                        cache_key(kernel)), kernel.fn.__name__)


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
    return REGISTRY.config_id(key, lambda: stable_id("config", config_fingerprint(config)), config)


def launch_config(cid: int) -> LaunchConfig:
    """The configuration of an id this process traced (LookupError otherwise)."""
    config = REGISTRY.configs.get(cid)
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
