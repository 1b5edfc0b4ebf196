"""NVRTC compiles of CUDA C++ kernels, through the disk cache."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Sequence, Union

from ... import _C, _cubin, _disk_cache, _launch_mode
from ..._version import __version__
from ..kernel_registry import stable_id

# Part of every cache key: a new layout of the cached entry ignores older entries.
ENTRY_VERSION = 1


@dataclass(frozen=True)
class CompiledCuda:
    """One compiled kernel instance: its cubin and entry point."""

    cubin: bytes
    lowered_name: str  # the entry point's symbol (mangled for a template instance)
    name_expression: str  # as C++ names it, e.g. "scale<float, 128>"
    capability: int
    log: str  # NVRTC's warnings

    def info(self) -> _cubin.KernelInfo:
        """What the cubin says about the entry point (parameter sizes, thread limits, shared memory)."""
        return _cubin.kernel_info(self.cubin, self.lowered_name)


@functools.lru_cache(maxsize=None)
def cuda_include_dirs() -> tuple[str, ...]:
    """The CUDA headers beside the NVRTC in use (the torch wheel's ``nvidia/cu13/include``, or the CUDA 12
    wheels' ``nvidia/cuda_runtime/include``), for ``#include <cuda_fp16.h>`` and friends; () when there are
    none. The runtime finds them, for kernels of ops defined in C++ too."""
    return tuple(_C.nvrtc_include_dirs())


def _template_argument(value: Union[int, bool, str]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value:
        return value  # a type ("float", "__half") or any C++ expression
    raise TypeError(f"torch_tile: a template argument must be an int, a bool or a C++ type name; got {value!r}")


class CudaKernel:
    """A ``__global__`` function of a CUDA C++ source.

    Args:
        source: the translation unit's text, or the path of a ``.cu`` file.
        name: the kernel's name (without template arguments).
        options: extra NVRTC options (``-DNAME=VALUE``, ``-I<dir>``, ``-std=c++20``, ...).
        specialize: which specialization bits the kernel's variants are compiled for, each case a
            variant compiled once, the bits of parameter ``i`` seen as macros that are 0 or 1.
            ``True`` (or ``"triton"``): Triton's bits, a pointer's 16-byte alignment
            (``TT_ALIGNED16_<i>``) and an integer equal to 1 or divisible by 16 (``TT_EQ1_<i>``,
            ``TT_DIV16_<i>``; ``#if TT_DIV16_3``). ``"cutile"``: cuTile's bits of each tensor argument,
            from the tensor's own layout (``TT_ALIGNED16_<i>``, ``TT_DISJOINT_<i>`` and per dimension
            ``d`` < 5 ``TT_STRIDE16B_<i>_<d>``, a stride that is a multiple of 16 bytes,
            ``TT_STRIDE1_<i>_<d>``, ``TT_SIZE16_<i>_<d>``, ``TT_SIZE1_<i>_<d>``); integers are not
            specialised then. ``False`` (the default): nothing is specialised and no macro is defined.
    """

    SPECIALIZATIONS = {False: "", None: "", True: "triton", "triton": "triton", "cutile": "cutile"}

    def __init__(self, source: Union[str, os.PathLike], name: str, *, options: Sequence[str] = (),
                 specialize: Union[bool, str] = False):
        if isinstance(source, os.PathLike) or (isinstance(source, str) and source.endswith(".cu")
                                                and "\n" not in source and os.path.isfile(source)):
            self.path = os.fspath(source)
            with open(self.path, encoding="utf-8") as f:
                self.source = f.read()
        elif isinstance(source, str):
            self.path = None
            self.source = source
        else:
            raise TypeError(f"torch_tile: CudaKernel source must be a string or a .cu path; got {type(source)}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"torch_tile: CudaKernel name must be the kernel's C++ identifier; got {name!r}")
        self.name = name
        self.options = tuple(options)
        if specialize not in self.SPECIALIZATIONS:
            raise ValueError(f"torch_tile: CudaKernel {name}: specialize must be False, True, 'triton' or "
                             f"'cutile'; got {specialize!r}")
        self.specialize = self.SPECIALIZATIONS[specialize]  # "", "triton" or "cutile"
        # Same source, name, options and specialization: the same kernel, in every process (plans and
        # bundles name it so).
        self.stable_id = stable_id("cuda kernel", self.source, self.name, list(self.options), self.specialize)

    def __repr__(self) -> str:
        return f"CudaKernel({self.name!r}, {self.path or 'source'})"

    def __getitem__(self, launch):
        """``kernel[grid, block](*args, shared_mem=0, template_args=())`` in a torch_tile op body: recorded
        into the op's plan and launched natively. ``grid``: 1 to 3 ints (may depend on sizes); ``block``:
        threads per block, an int or 2 to 3 ints (x and y up to 1024, z up to 64, 1024 in all; fixed per
        plan); ``template_args``: ints, bools, C++ type names or
        torch dtypes (fixed per plan, e.g. ``x.dtype``)."""
        if not isinstance(launch, tuple) or len(launch) != 2:
            raise TypeError(f"torch_tile: launch a CUDA kernel as {self.name}[grid, block](*args), got "
                            f"{self.name}[{launch!r}]")
        grid, block = launch

        def launcher(*args, shared_mem=0, template_args=()):
            mode = _launch_mode.current_mode()
            if mode is None:
                raise RuntimeError(f"torch_tile: CUDA kernel {self.name} is launched from torch_tile op bodies "
                                   "(@torch_tile.op), which record it into the op's plan")
            return mode.launch(self, grid, args, {"block": block, "shared_mem": shared_mem,
                                                  "template_args": template_args})

        return launcher

    def name_expression(self, template_args: Sequence[Union[int, bool, str]] = ()) -> str:
        """``name<args...>`` as C++ spells the instance (``name`` without template arguments)."""
        return _C.cuda_name_expression(self.name, [_template_argument(a) for a in template_args])

    def compile(self, template_args: Sequence[Union[int, bool, str]] = (), *, capability: int,
                label: str = "", defines: Sequence[str] = ()) -> CompiledCuda:
        """The instance compiled for sm_<capability> (from the disk cache when it has it), with
        ``defines`` (``NAME=VALUE``: a variant's specialization bits). A compile error is a ValueError
        carrying NVRTC's log; ``label`` says who asked (e.g. the op)."""
        expression = self.name_expression(template_args)
        where = f"{label + ', ' if label else ''}kernel {expression}" + (f" ({self.path})" if self.path else "")
        options = [*self.options, *(f"-I{d}" for d in cuda_include_dirs()), *(f"-D{d}" for d in defines)]
        key = _disk_cache.content_key("cuda", ENTRY_VERSION, __version__, _C.nvrtc_version(), self.source,
                                      expression, options, capability)

        def build() -> tuple[dict, bytes]:
            out = _C.compile_cuda_source(self.source, expression, options, capability, where)
            return {"lowered_name": out["lowered_name"], "log": out["log"]}, out["cubin"]

        def validate(meta: dict, cubin: bytes):
            name = meta.get("lowered_name")
            if not isinstance(name, str) or not _cubin.kernel_info(cubin, name).has_symbol:
                return f"the cubin has no entry point {name!r}"
            return None

        meta, cubin = _disk_cache.active().get_or_build(key, build, validate=validate)
        return CompiledCuda(cubin=cubin, lowered_name=meta["lowered_name"], name_expression=expression,
                            capability=capability, log=meta.get("log", ""))
