"""The cuTile frontend's kernels and launch configurations, by stable id, and
its compile callback: a variant is cuTile's compile of the kernel for the
signature its key describes (``KernelSignature`` of ``ArrayConstraint``s,
``ScalarConstraint``s and ``ConstantConstraint``s)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Union

import torch

from ... import _C, _cubin, _disk_cache, _interpreter_exit, _plan
from ..._version import __version__
from ..kernel_registry import KernelRegistry, stable_id
from ..launch_metadata import plain_launch_metadata

FRONTEND = "cutile"
ENTRY_VERSION = 1  # part of every disk-cache key: a new entry layout ignores older entries
K = _plan.BindingKind
W = _plan.key_word
L = _C.key_word.layout
INSTALL_HINT = "pip install torch_tile[cutile] (cuda-tile with its tileiras compiler)"


@dataclass(frozen=True)
class ArrayParam:
    ndim: int
    index64: bool  # ct.IndexedWithInt64: shapes and strides as int64


@dataclass(frozen=True)
class ScalarParam:
    kind: int  # BindingKind: INT, BOOL or FLOAT


@dataclass(frozen=True)
class ConstantParam:
    value: Union[int, bool, float]


Param = Union[ArrayParam, ScalarParam, ConstantParam]


@dataclass(frozen=True)
class CutileLaunchConfig:
    kernel: Any  # the ct.kernel
    params: tuple[Param, ...]  # one per kernel parameter


REGISTRY = KernelRegistry(FRONTEND)


def is_kernel(obj: Any) -> bool:
    """Whether ``obj`` is a ``@ct.kernel`` (without importing cuda.tile)."""
    cls = type(obj)
    return cls.__name__ == "kernel" and cls.__module__.startswith("cuda.tile")


def _source_of(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):  # defined without a file: its bytecode and constants
        return repr((fn.__code__.co_code, fn.__code__.co_consts))


def _value_identity(value: Any) -> Any:
    """What a value a kernel reads (a closure cell or a global) contributes to its compile: a function's
    source (a cuTile helper, or the kernel of a @ct.function), a module's name, else its repr."""
    fn = getattr(value, "_pyfunc", value)
    if inspect.isfunction(fn):
        return ["function", f"{fn.__module__}.{fn.__qualname__}", _source_of(fn)]
    if inspect.ismodule(value):
        return ["module", value.__name__]
    return ["value", type(value).__qualname__, repr(value)]


def identity(kernel) -> list:
    """What cuTile compiles a kernel from: its qualified name and source, its compiler options, and the values
    it reads from closure cells and globals (cuTile folds them in at compile time), so two kernels that differ
    only there are two kernels, and an edited global or helper misses the disk cache."""
    fn = kernel._pyfunc
    cells = [_value_identity(c.cell_contents) for c in (fn.__closure__ or ())]
    globals_read = [[name, _value_identity(fn.__globals__[name])] for name in sorted(set(fn.__code__.co_names))
                    if name in fn.__globals__]
    return [f"{fn.__module__}.{fn.__qualname__}", _source_of(fn), repr(kernel._compiler_options), cells, globals_read]


def kernel_id(kernel) -> int:
    """The kernel's stable id, from its identity (registered with C++ on first use)."""
    return REGISTRY.kernel(stable_id("cutile kernel", identity(kernel)), kernel, kernel._pyfunc.__name__)


def _describe(param: Param) -> list:
    if isinstance(param, ArrayParam):
        return ["array", param.ndim, param.index64]
    if isinstance(param, ScalarParam):
        return ["scalar", int(param.kind)]
    return ["constant", type(param.value).__name__, param.value]


def config_id(config: CutileLaunchConfig, kid: int) -> int:
    """The configuration's stable id (the first word of its keys): the kernel (``kid``, its ``kernel_id``),
    each parameter's structure and the constants' values."""
    cid = stable_id("cutile config", kid, [_describe(p) for p in config.params])
    return REGISTRY.config(cid, config)


def _ct():
    try:
        import cuda.tile as ct
        from cuda.tile import compilation
    except ImportError as e:
        raise RuntimeError(f"torch_tile: compiling a cuTile kernel needs cuda-tile: {INSTALL_HINT} ({e})") from None
    return ct, compilation


def _element_type(ct, packed: int):
    dtype = _C.dtype_of_packed(packed)
    name = str(dtype).replace("torch.", "").replace("bool", "bool_")
    if not hasattr(ct, name):
        raise TypeError(f"torch_tile: cuTile has no element type for {dtype}")
    return getattr(ct, name), dtype.itemsize * 8


def _array_constraint(ct, compilation, param: ArrayParam, layout: int, size_stride_words: list[int]):
    """cuTile's ArrayConstraint for an array's layout word (the runtime's ``layout_key_word``: cuTile's launcher's
    bits, which its launcher turns into a constraint exactly so) and its size and stride words (their int
    widths), and whether its sizes and strides are int64."""
    element, bits = _element_type(ct, layout >> L.DTYPE_SHIFT)
    n = param.ndim
    wide = param.index64 or any(w >> 2 == W.INT64 for w in size_stride_words)

    def bit(shift: int, d: int) -> bool:
        return d < L.MAX_DIMS and bool(layout >> (shift + d) & 1)

    stride_divisor = 128 // bits if 128 % bits == 0 else 1  # 16 bytes, in elements
    stride_one = [bit(L.STRIDE_ONE_SHIFT, d) for d in range(n)]
    return compilation.ArrayConstraint(
        element, n, index_dtype=ct.int64 if wide else ct.int32, alias_groups=(),
        stride_lower_bound_incl=[None if one else 0 for one in stride_one],  # a constant stride needs no bound
        may_alias_internally=not layout & L.DISJOINT,
        stride_constant=[1 if one else None for one in stride_one],
        shape_constant=[1 if bit(L.SIZE_ONE_SHIFT, d) else None for d in range(n)],
        stride_divisible_by=[stride_divisor if bit(L.STRIDE_16BYTES_SHIFT, d) else 1 for d in range(n)],
        shape_divisible_by=[16 if bit(L.SIZE_DIV16_SHIFT, d) else 1 for d in range(n)],
        base_addr_divisible_by=16 if layout & L.BASE_ALIGNED16 else 1), wide


def signature(config: CutileLaunchConfig, words: list[int]):
    """cuTile's ``KernelSignature`` for a key (words[0] is the configuration) and the runtime parameter types
    of the compiled kernel, in its calling convention's order. The convention is the one cuTile's own
    launcher picks (cuda-tile 1.7.0): ``cutile_python_v2`` when an array has a size of 1 (which only v2 can
    specialise), ``cutile_python_v1`` otherwise; the parameters are the same in both."""
    ct, compilation = _ct()
    constraints, types = _constraints(ct, compilation, config, words)
    sizes_of_one = any(any(s is not None for s in getattr(c, "shape_constant", ())) for c in constraints)
    convention = compilation.CallingConvention.cutile_python_v2 if sizes_of_one else \
        compilation.CallingConvention.cutile_python_v1
    return compilation.KernelSignature(constraints, convention()), types


def _constraints(ct, compilation, config: CutileLaunchConfig, words: list[int]) -> tuple[list, list[str]]:
    constraints, types = [], []
    rest = iter(words[1:])
    for param in config.params:
        if isinstance(param, ConstantParam):
            constraints.append(compilation.ConstantConstraint(param.value))
        elif isinstance(param, ArrayParam):
            constraint, wide = _array_constraint(ct, compilation, param, next(rest),
                                                 [next(rest) for _ in range(2 * param.ndim)])
            constraints.append(constraint)
            types += ["*i8"] + ["i64" if wide else "i32"] * (2 * param.ndim)
        else:
            word = next(rest)
            if param.kind == K.FLOAT:
                constraints.append(compilation.ScalarConstraint(ct.float32))
                types.append("fp32")
            elif param.kind == K.BOOL:
                constraints.append(compilation.ScalarConstraint(ct.bool_))
                types.append("i1")
            else:
                wide = word >> 2 == W.INT64
                constraints.append(compilation.ScalarConstraint(ct.int64 if wide else ct.int32))
                types.append("i64" if wide else "i32")
    return constraints, types


def _compiler_version() -> str:
    from cuda.tile import _compile
    return str(_compile._get_compiler_version_string())


def _bytecode_version() -> str:
    """The Tile IR bytecode version cuTile's compile emits here (the newest its tileiras accepts, as
    ``compile_tile`` picks it): two versions make two different cubins."""
    from cuda.tile import _compile
    return str(_compile._get_max_supported_bytecode_version(_compile.default_tile_context.config.temp_dir,
                                                            allow_dev=_compile.dev_features_enabled()))


def variant_metadata(config: CutileLaunchConfig, words: list[int], capability: int) -> dict:
    """Compiles the configuration's kernel for the key's signature on sm_<capability> (from the disk cache
    when it has it) and describes how to launch it (the fields ``binary_from_python`` reads)."""
    ct, compilation = _ct()
    from cuda.tile._compile import compile_tile

    kernel = config.kernel
    sig, types = signature(config, words)
    key = _disk_cache.content_key("cutile", ENTRY_VERSION, __version__, ct.__version__, _compiler_version(),
                                  _bytecode_version(),
                                  identity(kernel), repr(sig.parameters), sig.calling_convention.name, capability)

    def build() -> tuple[dict, bytes]:
        result = compile_tile(kernel._annotated_function, [sig], sm_arch=f"sm_{capability}",
                              compiler_options=kernel._compiler_options)
        return {"symbol": result.kernel_signatures[0].symbol}, result.cubin

    def validate(meta: dict, cubin: bytes):
        info = _cubin.kernel_info(cubin, meta.get("symbol", ""))
        if not info.has_symbol or info.required_threads is None:
            return f"the cubin has no entry point {meta.get('symbol')!r} with a required block size"
        return None

    meta, cubin = _disk_cache.active().get_or_build(key, build, validate=validate)
    # The block cuTile's compiler chose (the cubin's .reqntid), which cuTile's own launcher also satisfies.
    threads = _cubin.kernel_info(cubin, meta["symbol"]).required_threads
    return plain_launch_metadata(meta["symbol"], cubin, threads, 0, types)


@_interpreter_exit.work
def _compile_callback(kid: int, words: list[int], capability: int) -> dict:
    """Called by C++ (GIL held) on a kernel-cache miss."""
    return variant_metadata(REGISTRY.config_for(kid, words[0], "cuTile kernel"), words, capability)


def register() -> None:
    """Makes this frontend the compiler of cuTile kernels' native variant caches (called once by
    ``torch_tile/__init__.py``; imports nothing of cuTile)."""
    _C.register_frontend(FRONTEND, torch._disable_dynamo(_compile_callback))  # runtime code, never compiled
