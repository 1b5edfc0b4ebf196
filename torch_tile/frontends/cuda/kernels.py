"""The CUDA C++ frontend's kernels and launch configurations, by stable id, and
its compile callback (C++ asks it for a variant on a kernel-cache miss).

A launch configuration is a launch site's static part: the template arguments,
the block size, the dynamic shared memory and the kinds of the parameters.
Ids derive from the source, the kernel's name, the options and that static
part, so they mean the same in every process (bundles, serialized plans)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import torch

from ... import _C, _cubin, _interpreter_exit, _plan
from ..kernel_registry import KernelRegistry, stable_id
from ..launch_metadata import plain_launch_metadata
from .compile import CudaKernel
from .mangled import FLOATING, INTEGER, POINTER, parameter_categories

FRONTEND = "cuda"
K = _plan.BindingKind

TemplateArg = Union[int, bool, str]


@dataclass(frozen=True)
class CudaLaunchConfig:
    kernel: CudaKernel
    template_args: tuple[TemplateArg, ...]
    block: tuple[int, int, int]  # threads per block, x y z
    shared_mem: int  # dynamic shared memory, bytes
    kinds: tuple[int, ...]  # BindingKind per kernel parameter


REGISTRY = KernelRegistry(FRONTEND)


def kernel_id(kernel: CudaKernel) -> int:
    """The kernel's stable id (registered with C++ on first use)."""
    return REGISTRY.kernel(kernel.stable_id, kernel, kernel.name)


def config_id(config: CudaLaunchConfig) -> int:
    """The configuration's stable id (the first word of its specialization keys)."""
    cid = stable_id("cuda config", kernel_id(config.kernel), [[type(a).__name__, a] for a in config.template_args],
                     config.block, config.shared_mem, list(config.kinds))
    return REGISTRY.config(cid, config)


# The runtime parameter type of a binding kind, by the parameter's size in the cubin (its C++ declaration).
_PARAM_TYPES = {
    (K.TENSOR, 8): "*i8",
    (K.INT, 4): "i32", (K.INT, 8): "i64", (K.INT, 2): "i16", (K.INT, 1): "i8",
    (K.BOOL, 1): "i1", (K.BOOL, 4): "i32",
    (K.FLOAT, 4): "fp32", (K.FLOAT, 8): "fp64",
}
_KIND_NAMES = {K.TENSOR: "a tensor", K.INT: "an int", K.BOOL: "a bool", K.FLOAT: "a float"}
_KIND_CATEGORIES = {K.TENSOR: POINTER, K.INT: INTEGER, K.BOOL: INTEGER, K.FLOAT: FLOATING}


def specialization_defines(config: CudaLaunchConfig, words: list[int]) -> list[str]:
    """The macros a specialised kernel's variant sees, from its key's words (one per parameter after
    the configuration's), each 0 or 1: Triton's or cuTile's bits (see ``CudaKernel``). The runtime
    computes them, for kernels of ops defined in C++ too."""
    if not config.kernel.specialize:
        return []
    return _C.cuda_specialization_defines(list(config.kinds), list(words), config.kernel.name,
                                          layout=config.kernel.specialize == "cutile")


def variant_metadata(config: CudaLaunchConfig, capability: int, defines: list[str] = ()) -> dict:
    """Compiles the configuration's kernel instance for sm_<capability> (with a variant's ``defines``)
    and describes how to launch it (the fields ``binary_from_python`` reads). The parameter widths come
    from the cubin, so the values are passed as the kernel declares them; a launch whose arguments do
    not fit the declaration is refused."""
    kernel = config.kernel
    compiled = kernel.compile(config.template_args, capability=capability, defines=defines)
    where = f"CUDA kernel {compiled.name_expression}"
    info = compiled.info()
    if info.param_sizes is None or not info.has_symbol:
        raise RuntimeError(f"torch_tile: {where}: the cubin has no entry point {compiled.lowered_name}")
    if len(info.param_sizes) != len(config.kinds):
        raise ValueError(f"torch_tile: {where} takes {len(info.param_sizes)} parameters, but the launch passes "
                         f"{len(config.kinds)}")
    declared = parameter_categories(compiled.lowered_name) or [None] * len(config.kinds)
    types = []
    for i, (kind, size) in enumerate(zip(config.kinds, info.param_sizes)):
        if declared[i] is not None and declared[i] != _KIND_CATEGORIES[K(kind)]:
            raise TypeError(f"torch_tile: {where}: parameter {i} is declared {declared[i]}, but the launch passes "
                            f"{_KIND_NAMES[K(kind)]} there")
        ty = _PARAM_TYPES.get((K(kind), size))
        if ty is None:
            raise TypeError(f"torch_tile: {where}: parameter {i} is declared {size} bytes wide, but the launch "
                            f"passes {_KIND_NAMES.get(K(kind), K(kind).name)} there")
        types.append(ty)
    threads = config.block[0] * config.block[1] * config.block[2]
    if info.max_threads is not None and threads > info.max_threads[0]:
        raise ValueError(f"torch_tile: {where}: a block of {threads} threads exceeds its __launch_bounds__ "
                         f"({info.max_threads[0]})")
    if info.static_shared + config.shared_mem > _cubin.MAX_SHARED_BYTES:
        raise ValueError(f"torch_tile: {where}: {info.static_shared} bytes of static and {config.shared_mem} of "
                         f"dynamic shared memory exceed {_cubin.MAX_SHARED_BYTES}")
    return plain_launch_metadata(compiled.lowered_name, compiled.cubin, config.block, config.shared_mem, types)


@_interpreter_exit.work
def _compile_callback(kid: int, words: list[int], capability: int) -> dict:
    """Called by C++ (GIL held) on a kernel-cache miss. The template arguments, fixed by the
    configuration, make the instance; a specialised kernel's words also give its macros."""
    config = REGISTRY.config_for(kid, words[0], "CUDA kernel")
    return variant_metadata(config, capability, specialization_defines(config, words))


def register() -> None:
    """Makes this frontend the compiler of CUDA C++ kernels' native variant caches (called once by
    ``torch_tile/__init__.py``)."""
    _C.register_frontend(FRONTEND, torch._disable_dynamo(_compile_callback))  # runtime code, never compiled
