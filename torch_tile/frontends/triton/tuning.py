"""An autotuned launch in a trace: the config the autotuner itself chooses for the call (``autotune``'s doc
says how), and the tuning run on the call's real arguments that chooses it."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.overrides import _pop_mode_temporarily
from triton.runtime.autotuner import Autotuner
from triton.tools.tensor_descriptor import TensorDescriptor

from . import descriptors
from ..._errors import TraceError
from ..._launch_mode import launch_mode
from ...trace.stand_ins import TensorProxy, concrete
from ...trace.state import outside_trace
from . import tuples
from .autotune import base_kernel, choose, with_heuristics
from .interpret import InterpretLaunches
from .launches import TuningLaunches


def autotuned(tracer, tuner: Autotuner, grid, args: tuple, kwargs: dict):
    """The @triton.jit kernel under ``tuner`` and the launch kwargs with the
    config chosen for this call's tuning key (see the module's doc)."""
    jit = base_kernel(tuner, tracer.error)
    named = {**dict(zip(jit.arg_names, args)), **{k: v for k, v in kwargs.items() if k in jit.arg_names}}
    tune = tuning_run(tracer, tuner, grid, args, kwargs) if can_tune(tracer) else None
    config = choose(tuner, named, kwargs, tracer.device, tune, tracer.error)
    if config.pre_hook is not None:
        # Runs once, here, on the stand-ins: what it sets (typically the
        # block shapes of tensor descriptors, as in Triton's TMA tutorials)
        # enters the plan; work on tensors becomes plan steps.
        try:
            config.pre_hook({**named, **kwargs, **config.all_kwargs()})
        except TraceError as e:
            raise tracer.error(f"the pre_hook of autotune config {config} of {jit.fn.__name__} can only set "
                               f"launch arguments such as descriptor block shapes: {e}") from None
    return jit, with_heuristics(tuner, args, {**kwargs, **config.all_kwargs()})


def can_tune(tracer) -> bool:
    """Tuning runs kernels: it needs the call's real CUDA tensors (not fake, meta or CPU ones)."""
    if tracer.device.type != "cuda":
        return False
    with _pop_mode_temporarily():  # the tracing mode would take .device for a body's torch call
        tensors = list(tracer._input_values.values())
        return all(t.device.type == "cuda" and not is_fake(t) for t in tensors)


def tuning_run(tracer, tuner: Autotuner, grid, args: tuple, kwargs: dict):
    """The autotuner's own run on the call's real arguments (inputs cloned, so nothing the call sees is
    written; temporary outputs), outside the tracing modes; returns the config it chose."""
    def real(value, name: str):
        if isinstance(value, tuple):
            return tuples.map_leaves(lambda leaf: real(leaf, name), value)
        if isinstance(value, TensorProxy):
            if value._slot < tracer.num_inputs:
                return tracer._input_values[value._slot].clone()
            # A tensor the body makes, zero-filled: one that holds indices or offsets (made from the data) must
            # not send the configs' timing runs out of bounds.
            m = value._meta
            made = torch.empty_strided(m.sizes, m.strides, dtype=m.dtype, device=tracer.device)
            made.untyped_storage().fill_(0)
            return made
        if isinstance(value, TensorDescriptor):
            kernel = base_kernel(tuner, tracer.error).fn.__name__
            where = f"{tracer.op.qualname}: tensor descriptor '{name}' of kernel {kernel}"
            return descriptors.concrete_descriptor(value, real(value.base, name), where)
        return concrete(value)

    def real_grid(meta):  # the body's grid may close over its sizes: read without guards
        return tuple(concrete(g) for g in (grid(meta) if callable(grid) else grid))

    def tune():
        leaves = None if tracer.device.type == "cuda" else InterpretLaunches(tracer.op)
        with launch_mode(TuningLaunches(leaves)), _pop_mode_temporarily(), outside_trace():
            names = tuner.arg_names
            real_args = [real(a, n) for n, a in zip(names, args)]
            real_kwargs = {k: real(v, k) for k, v in kwargs.items()}
            tuner.best_config = None
            tuner.run(*real_args, grid=real_grid, warmup=False, **real_kwargs)
            if tuner.best_config is None:
                raise TraceError(f"{type(tuner).__name__}.run chose no config (best_config is not set)")
            return tuner.best_config

    return tune
