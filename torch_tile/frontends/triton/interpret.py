"""The CPU debug path: launches in an op body run with Triton's interpreter."""

from __future__ import annotations

import ctypes
import types
from typing import Any, Optional

import numpy as np
import torch
import triton
import triton.compiler.code_generator  # noqa: F401  (snapshots tl's builtins: import before they are patched)
import triton.language as tl
from triton.runtime.autotuner import Autotuner
from triton.runtime import interpreter
from triton.runtime.interpreter import InterpretedFunction, _patch_lang
from triton.runtime.jit import JITFunction, TensorWrapper

from . import descriptors, pointers
from .codegen_lock import interpretation, source_parsing
from ..._errors import KernelError
from ..._launch_mode import LaunchMode
from ..frontend import InterpretLaunches as InterpretedLaunches
from ...trace.state import body_location
from .autotune import base_kernel, choose, with_heuristics
from .tuples import leaves, map_leaves


# Dtypes Triton's interpreter computes wrongly (numpy has no bfloat16 or fp8:
# their bits are read as other types), refused on the CPU path.
_NOT_INTERPRETABLE = frozenset({torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
                                torch.float8_e5m2fnuz})


def _interpretable(value: Any) -> Any:
    """A pointer object (``pointers``) as a CPU tensor of one element at its address, which Triton's interpreter
    can run (it reads a pointer's memory through its tensor's storage; it runs a TensorWrapper itself); any other
    value unchanged, as is one that says it points at another device's memory, which the host must not read."""
    if not pointers.is_pointer_object(value) or isinstance(value, TensorWrapper):
        return value
    device = getattr(value, "device", None)
    if device is not None and torch.device(device).type != "cpu":
        return value
    dtype = pointers.element_dtype(value)
    if dtype is None:
        return value
    address = value.data_ptr()
    if not address:  # no memory (an empty tensor's): nothing a kernel reads
        return torch.empty(0, dtype=dtype)
    return torch.frombuffer((ctypes.c_char * dtype.itemsize).from_address(address), dtype=dtype)


def _converts_bools() -> bool:
    """Whether this Triton's interpreter takes a ``bool`` kernel argument (Triton 3.6's makes an int1 from a
    numpy int32 and raises ``ValueError``; 3.8's converts it to an int1 of its own)."""
    try:
        interpreter._implicit_cvt(True)
    except ValueError:
        return False
    return True


def _converted_with_bools(arg, convert=interpreter._implicit_cvt):
    """Triton's conversion of a launch argument, with a ``bool`` converted as Triton 3.8's interpreter does."""
    if isinstance(arg, bool):
        return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.bool_), tl.int1), tl.int1)
    return convert(arg)


# Installed for the interpreted launches only, where the interpreter cannot convert a bool itself.
_ARGUMENT_CONVERSION = interpreter._implicit_cvt if _converts_bools() else _converted_with_bools


class InterpretLaunches(LaunchMode):
    """Runs launches with Triton's interpreter (CPU tensors; slow, for debugging).

    Triton's interpreter expects every ``@triton.jit`` function, including
    ``triton.language``'s own (``tl.max``...), to have been created with
    TRITON_INTERPRET=1. For the duration of one interpreted launch, device-side
    calls of ordinary JIT functions are therefore routed through an
    ``InterpretedFunction`` and the interpret knob is on. Those patches are
    process-wide, so an interpreted launch holds the code-generation lock
    exclusively (``codegen_lock``): no compile runs meanwhile, and interpreted
    launches are serialized.

    A kernel that fails there (it does not compile, or fails while it runs) raises a ``KernelError`` naming the
    op whose body launched it (``op``, a TileOp), the kernel and the launch's line in the body.
    """

    _interpreted: dict[int, tuple[Any, Any]] = {}  # id(python fn) -> (fn, InterpretedFunction)

    def __init__(self, op: Optional[Any] = None):
        self.op = op

    @classmethod
    def _interpreted_fn(cls, fn, **kwargs):
        entry = cls._interpreted.get(id(fn))
        if entry is None:
            entry = (fn, InterpretedFunction(fn, **kwargs))
            cls._interpreted[id(fn)] = entry
        return entry[1]

    def launch(self, kernel, grid, args, kwargs):
        if not isinstance(kernel, (JITFunction, Autotuner)):  # another frontend's kernel: its own interpreter
            return InterpretedLaunches(self.op).launch(kernel, grid, args, kwargs)

        def device_call(jit_fn, *a, **kw):
            # InterpretedFunction.__call__, minus its own (never undone) patch:
            # the scope below already covers triton.language and its core.
            interpreted = self._interpreted_fn(jit_fn.fn)
            with source_parsing():  # its first rewrite parses the function's source
                fn = interpreted.rewrite()
            return fn(*a, **kw)

        if isinstance(kernel, Autotuner):  # no timing on CPU: the first config left after pruning
            jit = base_kernel(kernel, NotImplementedError)
            named = {**dict(zip(jit.arg_names, args)), **{k: v for k, v in kwargs.items() if k in jit.arg_names}}
            config = choose(kernel, named, kwargs, torch.device("cpu"), None, NotImplementedError)
            kwargs = {**kwargs, **config.all_kwargs()}
            if config.pre_hook is not None:
                config.pre_hook({**named, **kwargs})
            kwargs = with_heuristics(kernel, args, kwargs)
            kernel = jit
        args = tuple(map_leaves(_interpretable, a) for a in args)
        kwargs = {k: map_leaves(_interpretable, v) for k, v in kwargs.items()}
        arguments = [descriptors.tensor_of(leaf) for a in (*args, *kwargs.values()) for _, leaf in leaves(a)]
        for value in arguments:
            if isinstance(value, torch.Tensor) and value.dtype in _NOT_INTERPRETABLE:
                raise NotImplementedError(
                    f"{kernel.fn.__name__}: Triton's interpreter (the CPU debug path) computes wrong results "
                    f"for {value.dtype} tensors; use float32/float16 on CPU, or run on a GPU"
                )
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
            original_conversion, interpreter._implicit_cvt = interpreter._implicit_cvt, _ARGUMENT_CONVERSION
            try:
                with source_parsing():  # as in device_call: run() uses this rewrite
                    interp.rewrite()
                return interp.run(*args, grid=grid, warmup=False, **kwargs)
            except Exception as e:
                raise KernelError(f"{self._launch_site(kernel)}: Triton's interpreter failed: "
                                  f"{type(e).__name__}: {e}") from e
            finally:
                triton.knobs.runtime.interpret = interpret_knob
                JITFunction.__call__ = original_call
                interpreter._implicit_cvt = original_conversion
                scope.restore()

    def _launch_site(self, kernel) -> str:
        """Names the launch, from inside it: "op: kernel k (launched at body.py:12)"."""
        name = f"kernel {kernel.fn.__name__}"
        if self.op is None:
            return name
        return f"{self.op.qualname}: {name} (launched at {body_location(*self.op.sources)})"
