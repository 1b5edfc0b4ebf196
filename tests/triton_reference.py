"""Triton's own view of a launch, the independent reference the CPU tests compare
torch_tile against: the launches a body makes on real arguments, and what
JITFunction.run derives from them for an sm_90 device."""

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature

CAPABILITY = 90
TARGET = GPUTarget("cuda", CAPABILITY, 32)
BACKEND = make_backend(TARGET)


def device_capability() -> int:
    """The current CUDA device's architecture as Triton names it (90 for sm_90)."""
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


def capture_launches(op, args):
    """(kernel, args, kwargs) of each launch the body makes on the real arguments (nothing runs)."""
    calls = []

    def record(self, *a, grid, warmup, **kw):
        calls.append((self, a, dict(kw)))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(JITFunction, "run", record)
        op.fn(*args)
    return calls


def triton_specialization(kernel, args, kwargs):
    """(options, signature, constexprs, attrs) as JITFunction.run derives them for these arguments."""
    binder = create_function_from_signature(kernel.signature, kernel.params, BACKEND)
    kwargs = dict(kwargs)
    kwargs["debug"] = kwargs.get("debug", kernel.debug) or triton.knobs.runtime.debug
    if hasattr(triton.knobs.compilation, "instrumentation_mode"):
        kwargs["instrumentation_mode"] = triton.knobs.compilation.instrumentation_mode
    bound, spec, options = binder(*args, **kwargs)
    return kernel._pack_args(BACKEND, kwargs, bound, spec, options)


def triton_compile_real(kernel, args, kwargs):
    """What kernel[grid](*args, **kwargs) compiles on an sm_90 device (JITFunction.run's steps)."""
    options, signature, constexprs, attrs = triton_specialization(kernel, args, kwargs)
    src = ASTSource(kernel, signature, constexprs, attrs)
    return triton.compile(src, target=TARGET, options=options.__dict__), src
