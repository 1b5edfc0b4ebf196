"""The TileLang frontend's kernels and launch configurations, by stable id, and its compile callback: a variant
is TileLang's own compile (``tilelang_callback_cuda_compile``: nvcc with TileLang's flags, the cubin its
executor launches) of the lowered CUDA source, through torch_tile's disk cache."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import torch

from ... import _C, _cubin, _disk_cache, _interpreter_exit
from ..._version import __version__
from ..kernel_registry import KernelRegistry, stable_id
from ..launch_metadata import plain_launch_metadata
from .lowering import BufferParam, DeviceKernel, arch_capability, lowering, once_per_kernel, signature

FRONTEND = "tilelang"
ENTRY_VERSION = 1  # part of every disk-cache key: a new entry layout ignores older entries
REGISTRY = KernelRegistry(FRONTEND)

# TVM scalar dtypes -> the runtime's parameter types (Triton's names).
_SCALAR_TYPES = {"int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
                 "uint32": "u32", "uint64": "u64", "bool": "i1", "float32": "fp32", "float64": "fp64"}


def is_kernel(obj: Any) -> bool:
    """Whether ``obj`` is a TileLang ``JITKernel`` (without importing tilelang)."""
    cls = type(obj)
    return cls.__name__ == "JITKernel" and cls.__module__.startswith("tilelang")


@dataclass(frozen=True)
class TileLangLaunchConfig:
    kernel: Any  # the JITKernel
    index: int  # its device kernel, in launch order


_kernel_ids: dict[tuple, tuple[Any, int]] = {}  # (id(JITKernel), device kernel) -> (the kernel, its stable id)


def _version() -> str:
    return str(sys.modules["tilelang"].__version__)


def _compile_options(kernel) -> list:
    """What besides the source decides TileLang's cubin: its target and pass configs (fast math, device flags)."""
    return [str(kernel.target), sorted((str(k), repr(v)) for k, v in dict(kernel.pass_configs or {}).items()),
            repr(getattr(kernel, "compile_flags", None))]


def kernel_id(kernel, index: int) -> int:
    """The stable id of ``kernel``'s device kernel ``index``: TileLang's version, the lowered source, the compile
    options and the entry point (registered with C++ on first use)."""
    def make() -> int:
        low = lowering(kernel)
        name = low.kernels[index].name
        return REGISTRY.kernel(stable_id("tilelang kernel", _version(), low.source, _compile_options(kernel), name),
                               kernel, name)
    return once_per_kernel(_kernel_ids, kernel, make, index)


def config_id(kernel, index: int, kid: int) -> int:
    """One configuration per device kernel: TileLang specialises nothing per call beyond what the kernel was
    compiled for (dtypes, the static sizes)."""
    return REGISTRY.config_id((kid, index), lambda: stable_id("tilelang config", kid, index),
                              TileLangLaunchConfig(kernel, index))


def param_types(dk: DeviceKernel) -> list[str]:
    types = []
    for p in dk.params:
        if p.kind == "tensormap":
            types.append("nvTmaDesc")
        elif p.kind == "pointer":
            types.append("*" + p.dtype)
        else:
            types.append(_SCALAR_TYPES[p.dtype])
    return types


def tensor_maps(kernel, dk: DeviceKernel) -> list[dict]:
    """Each TMA descriptor as the runtime encodes it (block shape outermost first, TileLang's data type, the
    buffer's element size, swizzle); TileLang's other fields are those the runtime encodes (checked when the
    launch is recorded)."""
    sig = signature(kernel)
    maps = []
    for p in dk.params:
        if p.kind == "tensormap":
            tm = p.tensor_map
            buffer: BufferParam = sig.buffer(tm.data)
            maps.append({"block_size": list(reversed(tm.box)), "elem_type": tm.data_type,
                         "elem_size": buffer.dtype.itemsize, "swizzle": tm.swizzle})
    return maps


def variant_metadata(config: TileLangLaunchConfig, capability: int) -> dict:
    """Compiles the configuration's kernel for sm_<capability> (from the disk cache when it has it) and describes
    how to launch it (the fields ``binary_from_python`` reads): one runtime parameter per binding, in order."""
    kernel = config.kernel
    low = lowering(kernel)
    dk = low.kernels[config.index]
    compiled_for = arch_capability(low.target)
    if compiled_for != capability:
        arch = low.target.attrs.get("arch")
        raise RuntimeError(f"torch_tile: TileLang kernel {dk.name} was compiled for target {arch} and cannot run on "
                           f"an sm_{capability} device: compile the JITKernel for this device (target='cuda' picks "
                           "the current one)")
    key = _disk_cache.content_key("tilelang", ENTRY_VERSION, __version__, _version(), low.source,
                                  _compile_options(kernel), capability)

    def build() -> tuple[dict, bytes]:
        from tilelang.cuda.backend import tilelang_callback_cuda_compile
        return {}, bytes(tilelang_callback_cuda_compile(low.source, low.target, dict(kernel.pass_configs or {})))

    def validate(meta: dict, cubin: bytes):
        if not _cubin.kernel_info(cubin, dk.name).has_symbol:
            return f"the cubin has no entry point {dk.name!r}"
        return None

    _, cubin = _disk_cache.active().get_or_build(key, build, validate=validate)
    meta = plain_launch_metadata(dk.name, cubin, tuple(int(b) for b in dk.block), dk.shared, param_types(dk))
    meta.update(launch_pdl=dk.pdl, launch_cooperative_grid=dk.cooperative, tensor_maps=tensor_maps(kernel, dk))
    return meta


@_interpreter_exit.work
def _compile_callback(kid: int, words: list[int], capability: int) -> dict:
    """Called by C++ (GIL held) on a kernel-cache miss."""
    return variant_metadata(REGISTRY.config_for(kid, words[0], "TileLang kernel"), capability)


def register() -> None:
    """Makes this frontend the compiler of TileLang kernels' native variant caches (called once by
    ``torch_tile/__init__.py``; imports nothing of TileLang)."""
    _C.register_frontend(FRONTEND, torch._disable_dynamo(_compile_callback))  # runtime code, never compiled
