"""Compiles Triton kernel variants for the native runtime.

Compilation reproduces Triton's own JIT path exactly: the specialization words
computed in C++ are turned back into representative arguments, bound with the
binder Triton builds for the kernel (``create_function_from_signature``),
packed with ``JITFunction._pack_args`` and compiled with ``triton.compile``. So
the binary is the one ``kernel[grid](...)`` would build for the same inputs.
A variant is looked up in the disk cache first; an entry whose launch metadata
does not fit its cubin is rebuilt (``_cubin.launch_metadata_problem``)."""

from __future__ import annotations

from typing import Any

import torch
import triton
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature

from ... import _C, _cubin, _disk_cache, _interpreter_exit, _plan, _process_locks
from . import descriptors
from .codegen_lock import code_generation, source_parsing
from ..._version import __version__
from . import tuples
from .kernels import FRONTEND, LaunchConfig, config_fingerprint, kernel_id, launch_config

K = _plan.BindingKind
W = _plan.key_word


class Pointer:
    """A stand-in tensor argument for Triton's binder: dtype and alignment only."""

    def __init__(self, dtype: torch.dtype, aligned: bool):
        self.dtype = dtype
        self._ptr = 0 if aligned else 8

    def data_ptr(self) -> int:
        return self._ptr


# Representative values that make Triton's specialize_impl give the same answer
# as the C++ key word (type << 2 | class): i32/i64 x {any, ==1, %16, other}.
_INT_REPRESENTATIVE = {
    (W.INT32, W.VALUE_ANY): 3, (W.INT32, W.VALUE_ONE): 1, (W.INT32, W.VALUE_DIV16): 16, (W.INT32, W.VALUE_OTHER): 3,
    (W.INT64, W.VALUE_ANY): 2**32 + 3, (W.INT64, W.VALUE_DIV16): 2**32, (W.INT64, W.VALUE_OTHER): 2**32 + 3,
}


def _signed(word: int) -> int:
    return word - 2**64 if word >= 2**63 else word


def _representative_leaf(config: LaunchConfig, name: str, kind: K, word: int) -> Any:
    """A value of the parameter (or tuple leaf) ``name`` that Triton specialises as its key word says."""
    if kind in (K.TENSOR, K.TENSORDESC):
        pointer = Pointer(_C.dtype_of_packed(word >> 2), aligned=(word & 3) != W.UNALIGNED)
        return pointer if kind == K.TENSOR else descriptors.representative(config.statics[name], pointer)
    if kind == K.INT:
        return _INT_REPRESENTATIVE[(word >> 2, word & 3)]
    if kind == K.BOOL:
        return True
    if kind == K.FLOAT:
        return 1.5
    if kind == K.CONSTEXPR:
        return _signed(word)
    return config.statics[name]


def representative_args(config: LaunchConfig, words: list[int]) -> list[Any]:
    """Arguments that Triton's binder specializes exactly as the key says: one
    value per binding, a tuple parameter rebuilt from its leaves' bindings."""
    bindings = iter(zip(map(K, config.kinds), words[1:]))
    args = []
    for kp in config.kernel.params:
        shape = config.tuples.get(kp.name)
        if shape is None:
            args.append(_representative_leaf(config, kp.name, *next(bindings)))
        else:
            args.append(tuples.build(shape, lambda path, name=kp.name: _representative_leaf(
                config, tuples.leaf_name(name, path), *next(bindings))))
    return args


_binders: dict[tuple[int, int], tuple[Any, Any]] = {}  # (id(kernel), capability) -> (backend, binder)
_compiles = 0  # variants compiled by Triton in this process (tests count them)
_compiles_lock = _process_locks.lock()


def _binder(kernel: JITFunction, capability: int):
    key = (id(kernel), capability)
    cached = _binders.get(key)
    if cached is None:
        backend = make_backend(GPUTarget("cuda", capability, 32))
        cached = (backend, create_function_from_signature(kernel.signature, kernel.params, backend))
        _binders[key] = cached
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


class _Source(ASTSource):
    """Triton's ASTSource, with its steps that parse the kernel's Python source
    (``make_ir``: the TTIR; ``hash``: cache keys) under ``source_parsing``, one
    thread at a time (``ast.parse`` is not thread-safe on CPython < 3.11.8)."""

    def hash(self):
        with source_parsing():
            return super().hash()

    def make_ir(self, *args, **kwargs):
        with source_parsing():
            return super().make_ir(*args, **kwargs)


@_interpreter_exit.work
def compile_variant(kid: int, words: list[int], capability: int):
    """Compiles the variant a key describes, as ``kernel[grid]`` would (no GPU
    needed). Returns the Triton CompiledKernel and the ASTSource it came from."""
    with code_generation():
        kernel, options, signature, constexprs, attrs = specialize(kid, words, capability)
        src = _Source(kernel, signature, constexprs, attrs)
        compiled = triton.compile(src, target=GPUTarget("cuda", capability, 32), options=options.__dict__)
    return compiled, src


def specialization_of(kernel: JITFunction, args: list, capability: int) -> tuple:
    """What Triton's JIT compiles ``kernel[grid](*args)`` for on sm_<capability>, from its own binder: the
    kernel, the signature, constexprs, attributes and options, as a key (their reprs)."""
    with code_generation():
        _, options, signature, constexprs, attrs = _run_binder(kernel, capability, args, {})
    return kernel_id(kernel), capability, repr(signature), repr(constexprs), repr(attrs), repr(options)


def kernel_ttir(kernel: JITFunction, args: list, capability: int):
    """The TTIR Triton's JIT generates for ``kernel[grid](*args)`` on
    sm_<capability>, the way ``triton.compile`` makes its first stage (no GPU
    and no active driver needed). Returns the module and the signature it was
    specialised to (parameter name -> Triton type; "constexpr" for parameters
    folded into the code)."""
    with code_generation():
        backend, options, signature, constexprs, attrs = _run_binder(kernel, capability, args, {})
        src = _Source(kernel, signature, constexprs, attrs)
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        module = src.make_ir(GPUTarget("cuda", capability, 32), options, backend.get_codegen_implementation(options),
                             backend.get_module_map(), context)  # the module keeps the context alive
    return module, signature


def _runtime_params(src: ASTSource, tensordesc_meta, num_bindings: int) -> dict:
    """How the compiled kernel takes its parameters: for each value passed,
    the launch binding it comes from, its type and the part of the binding
    (-1: the value itself; a tensor descriptor expands to its CUtensorMap,
    shape and strides), plus one entry of TMA metadata per descriptor.

    Bindings are the parameters' leaves: a tuple parameter's signature is a
    tuple of its leaves' types, flattened depth first as Triton's launcher
    flattens it ("constexpr" leaves, folded into the code, pass nothing)."""
    indices, types, parts, tensor_maps = [], [], [], []
    metas = iter(tensordesc_meta or ())
    binding = 0  # the next leaf's binding index
    kernel_name = src.fn.fn.__name__

    def visit(ty: Any, name: str) -> None:
        nonlocal binding
        if isinstance(ty, tuple):  # namedtuples included
            for k, item in enumerate(ty):
                visit(item, f"{name}[{k}]")
            return
        i, binding = binding, binding + 1
        if ty == "constexpr":
            return
        where = f"parameter '{name}' of {kernel_name}"
        if isinstance(ty, str) and ty.startswith("tensordesc"):
            d_types, d_parts, tensor_map = descriptors.runtime_layout(next(metas, None), where)
            indices.extend([i] * len(d_types))
            types.extend(d_types)
            parts.extend(d_parts)
            tensor_maps.append(tensor_map)
            return
        if not isinstance(ty, str) or ty == "nvTmaDesc":
            raise NotImplementedError(f"torch_tile: {where} has type {ty!r}, which torch_tile cannot pass")
        indices.append(i)
        types.append(ty)
        parts.append(-1)

    for name, ty in src.signature.items():
        visit(ty, name)
    if binding != num_bindings:
        raise RuntimeError(f"torch_tile: the signature of {kernel_name} has {binding} leaves, but the launch has "
                           f"{num_bindings} bindings")
    return {"runtime_params": indices, "runtime_param_types": types, "runtime_param_parts": parts,
            "tensor_maps": tensor_maps}


def _compiled_entry(kid: int, words: list[int], capability: int) -> tuple[dict, bytes]:
    """Compiles a variant with Triton: (launch metadata, cubin)."""
    compiled, src = compile_variant(kid, words, capability)
    global _compiles
    with _compiles_lock:
        _compiles += 1
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
        **_runtime_params(src, getattr(md, "tensordesc_meta", None), len(words) - 1),
    }
    return meta, compiled.asm["cubin"]


def variant_cache_key(words: list[int], capability: int) -> str:
    """The disk-cache key of a variant: versions, configuration, specialization, target."""
    return _disk_cache.content_key("variant", __version__, "triton", triton.__version__,
                                   config_fingerprint(launch_config(words[0])), list(words[1:]), capability)


@_interpreter_exit.work
def _compile_callback(kid: int, words: list[int], capability: int) -> dict:
    """Called by C++ (GIL held) on a kernel-cache miss: the disk cache, else Triton.
    A disk entry whose launch metadata does not fit its cubin is rebuilt, never launched."""
    key = variant_cache_key(words, capability)
    meta, cubin = _disk_cache.active().get_or_build(
        key, lambda: _compiled_entry(kid, words, capability),
        validate=lambda entry, binary: _cubin.launch_metadata_problem(entry, binary, num_bindings=len(words) - 1))
    return {**meta, "cubin": cubin}


def compile_count() -> int:
    """Variants compiled by Triton through torch_tile in this process (disk-cache hits excluded)."""
    return _compiles


def register() -> None:
    """Makes this frontend the compiler of its kernels' native variant caches
    (called once by ``torch_tile/__init__.py``)."""
    _C.register_frontend(FRONTEND, torch._disable_dynamo(_compile_callback))  # runtime code, never compiled
