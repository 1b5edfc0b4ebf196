"""The Triton frontend: records launches into plans and compiles variants.

Compilation reproduces Triton's own JIT path exactly: the specialization words
computed in C++ are turned back into representative arguments, bound with the
binder Triton builds for the kernel (``create_function_from_signature``), packed
with ``JITFunction._pack_args`` and compiled with ``triton.compile``. So the
binary is the one ``kernel[grid](...)`` would build for the same inputs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import triton
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction, create_function_from_signature
from triton.tools.tensor_descriptor import TensorDescriptor

from . import _C, _descriptors, _disk_cache
from ._codegen_lock import code_generation, interpretation
from ._version import __version__
from ._expr import INT64_MAX, INT64_MIN, SymbolicInt, encode_int
from ._launch_mode import LaunchMode
from ._tracer import SymbolicFloat, TensorProxy, body_location

# Binding kinds (csrc/runtime/launch_plan.h: BindingKind).
TENSOR, INT, BOOL, FLOAT, CONSTEXPR, STATIC, TENSORDESC = range(7)

# Option names Triton accepts as launch keywords besides kernel parameters.
_RESERVED_OPTIONS = {"grid", "warmup", "stream", "device"}


@dataclass
class LaunchConfig:
    """The static part of one launch site: everything the key's first word stands for."""

    kernel: JITFunction
    kinds: tuple[int, ...]
    statics: dict[str, Any]
    options: dict[str, Any]


@dataclass
class _Registry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    kernel_ids: dict[int, int] = field(default_factory=dict)  # id(JITFunction) -> kernel id
    kernels: list[JITFunction] = field(default_factory=list)
    config_ids: dict[Any, int] = field(default_factory=dict)
    configs: list[LaunchConfig] = field(default_factory=list)
    binders: dict[tuple[int, int], tuple[Any, Callable]] = field(default_factory=dict)
    compiles: int = 0  # compile callbacks served (tests count them)


_registry = _Registry()


def kernel_id(kernel: JITFunction) -> int:
    """The stable id of a kernel in this process (registered with C++ on first use)."""
    with _registry.lock:
        kid = _registry.kernel_ids.get(id(kernel))
        if kid is None:
            kid = len(_registry.kernels)
            _registry.kernels.append(kernel)  # keeps the JITFunction (and its id()) alive
            _registry.kernel_ids[id(kernel)] = kid
            _C.register_kernel(kid, kernel.fn.__name__, "triton")
        return kid


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return (type(value).__name__, value)
    except TypeError:
        return (type(value).__name__, repr(value))


def config_id(config: LaunchConfig) -> int:
    key = (
        kernel_id(config.kernel),
        config.kinds,
        tuple((k, _hashable(v)) for k, v in config.statics.items()),
        tuple(sorted((k, _hashable(v)) for k, v in config.options.items())),
    )
    with _registry.lock:
        cid = _registry.config_ids.get(key)
        if cid is None:
            cid = len(_registry.configs)
            _registry.configs.append(config)
            _registry.config_ids[key] = cid
        return cid


def launch_config(cid: int) -> LaunchConfig:
    return _registry.configs[cid]


def record_launch(tracer, kernel, grid, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    """Turns one ``kernel[grid](*args, **kwargs)`` in a traced body into a plan
    step; also returns the kernel's bound arguments (stand-ins) by parameter."""
    site = body_location(tracer.op.fn)
    if not isinstance(kernel, JITFunction):
        raise tracer.error(f"only @triton.jit kernels (or @triton.autotune over one) can be launched in an op body, "
                           f"got {type(kernel).__name__}")
    param_names = [p.name for p in kernel.params]
    options = {k: v for k, v in kwargs.items() if k not in param_names}
    bad = _RESERVED_OPTIONS.intersection(options)
    if bad:
        raise tracer.error(f"launch option(s) {sorted(bad)} are chosen by torch_tile (current device and stream)")
    for k, v in options.items():
        if isinstance(v, SymbolicInt):
            options[k] = v.specialize()  # options are compile-time: guard on the value, as Dynamo would
        elif isinstance(v, (SymbolicFloat, TensorProxy)):
            raise tracer.error(f"launch option {k}= must be a constant, got {v!r}")
    try:
        bound = kernel.signature.bind(*args, **{k: v for k, v in kwargs.items() if k in param_names})
    except TypeError as e:
        raise tracer.error(f"launch of {kernel.fn.__name__}: {e}") from None
    bound.apply_defaults()

    kinds, statics, bindings = [], {}, []
    for kp in kernel.params:
        kind, binding, static = _bind(tracer, kernel, kp, bound.arguments[kp.name])
        kinds.append(kind)
        if kind in (STATIC, TENSORDESC):
            statics[kp.name] = static
        bindings.append(binding)

    if callable(grid):
        grid = grid(dict(bound.arguments))
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise tracer.error(f"grid must be a tuple of 1 to 3 ints, got {grid!r}")
    grid_exprs = []
    for g in list(grid) + [1] * (3 - len(grid)):
        if not isinstance(g, (int, SymbolicInt)) or isinstance(g, bool):
            raise tracer.error(f"grid entries must be ints, got {g!r}")
        grid_exprs.append(encode_int(g, tracer))

    config = LaunchConfig(kernel, tuple(kinds), statics, options)
    step = {
        "kernel": kernel_id(kernel),
        "config": config_id(config),
        "grid": grid_exprs,
        "bindings": bindings,
        "site": site,
    }
    return step, dict(bound.arguments)


_STATIC = (STATIC, -1, None, 0.0, True, True)


def _bind(tracer, kernel, kp, value) -> tuple[int, tuple, Any]:
    """(kind, binding tuple for C++, compile-time value for STATIC) of one parameter."""
    spec = not kp.do_not_specialize
    align = not kp.do_not_specialize_on_alignment
    where = f"parameter '{kp.name}' of {kernel.fn.__name__}"
    if kp.is_constexpr:
        if isinstance(value, SymbolicInt) and value.is_bool:
            return STATIC, _STATIC, bool(value.specialize())  # constexpr bools stay bools (guarded)
        if isinstance(value, SymbolicInt):
            return CONSTEXPR, (CONSTEXPR, -1, value.encode(), 0.0, True, True), None
        if isinstance(value, (TensorProxy, SymbolicFloat)):
            raise tracer.error(f"{where} is tl.constexpr but receives {value!r}")
        return STATIC, _STATIC, value
    if isinstance(value, TensorProxy):
        return TENSOR, (TENSOR, value._slot, None, 0.0, spec, align), None
    if isinstance(value, TensorDescriptor):
        binding, static = _descriptors.descriptor_binding(tracer, where, kp.name, value)
        return TENSORDESC, binding, static
    if isinstance(value, SymbolicInt):
        kind = BOOL if value.is_bool else INT
        return kind, (kind, -1, value.encode(), 0.0, spec, align), None
    if isinstance(value, bool):
        return BOOL, (BOOL, -1, encode_int(int(value), tracer), 0.0, spec, align), None
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise tracer.error(f"{where} = {value} does not fit in int64")
        return INT, (INT, -1, encode_int(value, tracer), 0.0, spec, align), None
    if isinstance(value, float):
        return FLOAT, (FLOAT, -1, None, value, spec, align), None
    if isinstance(value, SymbolicFloat):
        return FLOAT, (FLOAT, value.arg, None, 0.0, spec, align), None
    if value is None:
        return STATIC, _STATIC, None
    if isinstance(value, torch.Tensor):
        raise tracer.error(f"{where} receives a tensor the op did not take or allocate")
    raise tracer.error(f"{where} receives an unsupported value {value!r} ({type(value).__name__})")


# -- compiling -------------------------------------------------------------------------------------


class _Pointer:
    """A stand-in tensor argument for Triton's binder: dtype and alignment only."""

    def __init__(self, dtype: torch.dtype, aligned: bool):
        self.dtype = dtype
        self._ptr = 0 if aligned else 8

    def data_ptr(self) -> int:
        return self._ptr


_DL_TO_TORCH: dict[tuple[int, int], torch.dtype] = {
    (2, 32): torch.float32, (2, 16): torch.float16, (4, 16): torch.bfloat16, (2, 64): torch.float64,
    (0, 8): torch.int8, (0, 16): torch.int16, (0, 32): torch.int32, (0, 64): torch.int64,
    (1, 8): torch.uint8, (1, 16): torch.uint16, (1, 32): torch.uint32, (1, 64): torch.uint64,
    (6, 8): torch.bool, (10, 8): torch.float8_e4m3fn, (12, 8): torch.float8_e5m2,
    (11, 8): torch.float8_e4m3fnuz, (13, 8): torch.float8_e5m2fnuz,
}

# Representative values that make Triton's specialize_impl give the same answer
# as the C++ key word (type << 2 | class): i32/i64 x {any, ==1, %16, other}.
_INT_REPRESENTATIVE = {
    (0, 0): 3, (0, 1): 1, (0, 2): 16, (0, 3): 3,
    (1, 0): 2**32 + 3, (1, 2): 2**32, (1, 3): 2**32 + 3,
}


def _signed(word: int) -> int:
    return word - 2**64 if word >= 2**63 else word


def representative_args(config: LaunchConfig, words: list[int]) -> list[Any]:
    """Arguments that Triton's binder specializes exactly as the key says."""
    args = []
    for kp, kind, word in zip(config.kernel.params, config.kinds, words[1:]):
        if kind in (TENSOR, TENSORDESC):
            packed = word >> 2
            pointer = _Pointer(_DL_TO_TORCH[(packed & 0xFF, (packed >> 8) & 0xFF)], aligned=(word & 3) != 1)
            args.append(pointer if kind == TENSOR else _descriptors.representative(config.statics[kp.name], pointer))
        elif kind == INT:
            args.append(_INT_REPRESENTATIVE[(word >> 2, word & 3)])
        elif kind == BOOL:
            args.append(True)
        elif kind == FLOAT:
            args.append(1.5)
        elif kind == CONSTEXPR:
            args.append(_signed(word))
        else:
            args.append(config.statics[kp.name])
    return args


def _binder(kernel: JITFunction, capability: int):
    key = (id(kernel), capability)
    cached = _registry.binders.get(key)
    if cached is None:
        backend = make_backend(GPUTarget("cuda", capability, 32))
        cached = (backend, create_function_from_signature(kernel.signature, kernel.params, backend))
        _registry.binders[key] = cached
    return cached


def _run_binder(kernel: JITFunction, capability: int, args: list, launch_options: dict):
    """Triton's binder and ``_pack_args`` for ``kernel[grid](*args, **launch_options)``
    on sm_<capability>: (backend, options, signature, constexprs, attrs)."""
    backend, binder = _binder(kernel, capability)
    kwargs = dict(launch_options)
    # As JITFunction.run does before binding.
    kwargs["debug"] = kwargs.get("debug", kernel.debug) or triton.knobs.runtime.debug
    if hasattr(triton.knobs.compilation, "instrumentation_mode"):
        kwargs["instrumentation_mode"] = triton.knobs.compilation.instrumentation_mode
    bound_args, specialization, options = binder(*args, **kwargs)
    return backend, *kernel._pack_args(backend, kwargs, bound_args, specialization, options)


def specialize(kid: int, words: list[int], capability: int):
    """What Triton's JIT derives for the variant a key describes: returns
    (kernel, options, signature, constexprs, attrs), from Triton's own binder."""
    config = launch_config(words[0])
    kernel = config.kernel
    if kernel_id(kernel) != kid:
        raise RuntimeError("torch_tile: key does not belong to this kernel")
    _, options, signature, constexprs, attrs = _run_binder(kernel, capability, representative_args(config, words),
                                                           config.options)
    return kernel, options, signature, constexprs, attrs


def compile_variant(kid: int, words: list[int], capability: int):
    """Compiles the variant a key describes, as ``kernel[grid]`` would (no GPU
    needed). Returns the Triton CompiledKernel and the ASTSource it came from."""
    with code_generation():
        kernel, options, signature, constexprs, attrs = specialize(kid, words, capability)
        src = ASTSource(kernel, signature, constexprs, attrs)
        compiled = triton.compile(src, target=GPUTarget("cuda", capability, 32), options=options.__dict__)
    return compiled, src


def kernel_ttir(kernel: JITFunction, args: list, capability: int):
    """The TTIR Triton's JIT generates for ``kernel[grid](*args)`` on
    sm_<capability>, the way ``triton.compile`` makes its first stage (no GPU
    and no active driver needed). Returns the module and the signature it was
    specialised to (parameter name -> Triton type; "constexpr" for parameters
    folded into the code)."""
    with code_generation():
        backend, options, signature, constexprs, attrs = _run_binder(kernel, capability, args, {})
        src = ASTSource(kernel, signature, constexprs, attrs)
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        module = src.make_ir(GPUTarget("cuda", capability, 32), options, backend.get_codegen_implementation(options),
                             backend.get_module_map(), context)  # the module keeps the context alive
    return module, signature


def _runtime_params(src: ASTSource, tensordesc_meta) -> dict:
    """How the compiled kernel takes its parameters: for each value passed,
    the launch binding it comes from, its type and the part of the binding
    (-1: the value itself; a tensor descriptor expands to its CUtensorMap,
    shape and strides), plus one entry of TMA metadata per descriptor."""
    indices, types, parts, tensor_maps = [], [], [], []
    descriptors = iter(tensordesc_meta or ())
    for i, (name, ty) in enumerate(src.signature.items()):
        if ty == "constexpr":
            continue
        where = f"parameter '{name}' of {src.fn.fn.__name__}"
        if isinstance(ty, str) and ty.startswith("tensordesc"):
            d_types, d_parts, tensor_map = _descriptors.runtime_layout(next(descriptors, None), where)
            indices += [i] * len(d_types)
            types += d_types
            parts += d_parts
            tensor_maps.append(tensor_map)
            continue
        if not isinstance(ty, str) or ty == "nvTmaDesc":
            raise NotImplementedError(f"torch_tile: {where} has type {ty!r}; tuples are not supported yet")
        indices.append(i)
        types.append(ty)
        parts.append(-1)
    return {"runtime_params": indices, "runtime_param_types": types, "runtime_param_parts": parts,
            "tensor_maps": tensor_maps}


def _compiled_entry(kid: int, words: list[int], capability: int) -> tuple[dict, bytes]:
    """Compiles a variant with Triton: (launch metadata, cubin)."""
    compiled, src = compile_variant(kid, words, capability)
    _registry.compiles += 1
    md = compiled.metadata
    meta = {
        "name": md.name,
        "num_warps": md.num_warps,
        "num_ctas": md.num_ctas,
        "shared": md.shared,
        "launch_pdl": bool(getattr(md, "launch_pdl", False)),
        "launch_cooperative_grid": bool(getattr(md, "launch_cooperative_grid", False)),
        "global_scratch_size": int(getattr(md, "global_scratch_size", 0) or 0),
        "global_scratch_align": int(getattr(md, "global_scratch_align", 1) or 1),
        "profile_scratch_size": int(getattr(md, "profile_scratch_size", 0) or 0),
        "profile_scratch_align": int(getattr(md, "profile_scratch_align", 1) or 1),
        **_runtime_params(src, getattr(md, "tensordesc_meta", None)),
    }
    return meta, compiled.asm["cubin"]


def _stable(value: Any) -> Any:
    """A JSON value that identifies a constexpr/option value across processes."""
    if isinstance(value, JITFunction):
        return ["jit", value.cache_key]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return [type(value).__name__, value]
    return [type(value).__name__, repr(value)]


def config_fingerprint(config: LaunchConfig) -> list:
    """What a launch configuration means, independent of this process's ids."""
    return [
        config.kernel.fn.__module__ + "." + config.kernel.fn.__qualname__,
        config.kernel.cache_key,  # source and dependencies, as Triton hashes them
        list(config.kinds),
        sorted([k, _stable(v)] for k, v in config.statics.items()),
        sorted([k, _stable(v)] for k, v in config.options.items()),
    ]


def variant_cache_key(words: list[int], capability: int) -> str:
    """The disk-cache key of a variant: versions, configuration, specialization, target."""
    return _disk_cache.content_key("variant", __version__, "triton", triton.__version__,
                                   config_fingerprint(launch_config(words[0])), list(words[1:]), capability)


def _compile_callback(kid: int, words: list[int], capability: int) -> dict:
    """Called by C++ (GIL held) on a kernel-cache miss: the disk cache, else Triton.
    A disk entry whose launch metadata does not fit its cubin is rebuilt, never launched."""
    from . import _cubin

    key = variant_cache_key(words, capability)
    meta, cubin = _disk_cache.active().get_or_build(
        key, lambda: _compiled_entry(kid, words, capability),
        validate=lambda entry, binary: _cubin.launch_metadata_problem(entry, binary, num_bindings=len(words) - 1))
    return {**meta, "cubin": cubin}


_C.register_frontend("triton", _compile_callback)


def compile_count() -> int:
    """Variants compiled through torch_tile in this process."""
    return _registry.compiles


# -- the CPU debug path ------------------------------------------------------------------------------


# Dtypes Triton's interpreter computes wrongly (numpy has no bfloat16 or fp8:
# their bits are read as other types), refused on the CPU path.
_NOT_INTERPRETABLE = frozenset({torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
                                torch.float8_e5m2fnuz})


class InterpretLaunches(LaunchMode):
    """Runs launches with Triton's interpreter (CPU tensors; slow, for debugging).

    Triton's interpreter expects every ``@triton.jit`` function, including
    ``triton.language``'s own (``tl.max``...), to have been created with
    TRITON_INTERPRET=1. For the duration of one interpreted launch, device-side
    calls of ordinary JIT functions are therefore routed through an
    ``InterpretedFunction`` and the interpret knob is on. Those patches are
    process-wide, so an interpreted launch holds the code-generation lock
    exclusively (``_codegen_lock``): no compile runs meanwhile, and interpreted
    launches are serialized.
    """

    _interpreted: dict[int, tuple[Any, Any]] = {}  # id(python fn) -> (fn, InterpretedFunction)

    @classmethod
    def _interpreted_fn(cls, fn, **kwargs):
        from triton.runtime.interpreter import InterpretedFunction

        entry = cls._interpreted.get(id(fn))
        if entry is None:
            entry = (fn, InterpretedFunction(fn, **kwargs))
            cls._interpreted[id(fn)] = entry
        return entry[1]

    def launch(self, kernel, grid, args, kwargs):
        import types

        import triton.language as tl
        from triton.runtime.interpreter import _patch_lang

        def device_call(jit_fn, *a, **kw):
            # InterpretedFunction.__call__, minus its own (never undone) patch:
            # the scope below already covers triton.language and its core.
            return self._interpreted_fn(jit_fn.fn).rewrite()(*a, **kw)

        if isinstance(kernel, Autotuner):  # no timing on CPU: the first config left after pruning
            from ._autotune import base_kernel, choose

            jit = base_kernel(kernel, NotImplementedError)
            named = {**dict(zip(jit.arg_names, args)), **{k: v for k, v in kwargs.items() if k in jit.arg_names}}
            config = choose(kernel, named, kwargs, torch.device("cpu"), None, NotImplementedError)
            kwargs = {**kwargs, **config.all_kwargs()}
            if config.pre_hook is not None:
                config.pre_hook({**named, **kwargs})
            kernel = jit
        for value in map(_descriptors.tensor_of, list(args) + list(kwargs.values())):
            if isinstance(value, torch.Tensor) and value.dtype in _NOT_INTERPRETABLE:
                raise NotImplementedError(
                    f"{kernel.fn.__name__}: Triton's interpreter (the CPU debug path) computes wrong results "
                    f"for {value.dtype} tensors; use float32/float16 on CPU, or run on a GPU"
                )
        # Triton's code generator snapshots triton.language builtins when first
        # imported; import it now, before they are patched for interpretation.
        import triton.compiler.code_generator  # noqa: F401

        with interpretation():
            interp = self._interpreted_fn(
                kernel.fn,
                do_not_specialize=kernel.do_not_specialize,
                do_not_specialize_on_alignment=kernel.do_not_specialize_on_alignment,
            )
            original_call = JITFunction.__call__
            interpret_knob = triton.knobs.runtime.interpret
            scope = _patch_lang(types.SimpleNamespace(__globals__={"tl": tl, "core": tl.core}))
            JITFunction.__call__ = device_call
            triton.knobs.runtime.interpret = True
            try:
                return interp.run(*args, grid=grid, warmup=False, **kwargs)
            finally:
                triton.knobs.runtime.interpret = interpret_knob
                JITFunction.__call__ = original_call
                scope.restore()
