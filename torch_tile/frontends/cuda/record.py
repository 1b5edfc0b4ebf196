"""Records ``kernel[grid, block](*args, ...)`` of a CUDA C++ kernel in a traced
op body as a plan launch step: each argument a binding (a tensor slot, an int
or float expression), the grid three expressions, and the template arguments,
block size and dynamic shared memory the launch configuration."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ... import _C, _plan
from ..._errors import CallError
from ...trace.expr import SymbolicInt
from ...trace.state import body_location
from ..launch_record import grid_expressions, value_binding
from .compile import CudaKernel
from .kernels import CudaLaunchConfig, TemplateArg, config_id, kernel_id

K = _plan.BindingKind

def ctype(dtype: torch.dtype) -> str:
    """The C++ type of ``dtype``'s elements, for a template argument (``float``, ``__half``...; the
    runtime's names, which ops defined in C++ use too)."""
    name = _C.cuda_element_type(_C.packed_dtype(dtype))
    if not name:
        raise TypeError(f"torch_tile: no C++ element type for {dtype}")
    return name


def _static_int(tracer, what: str, value: Any) -> int:
    """A launch's compile-time int (block, shared memory): symbolic values are guarded on their value."""
    if isinstance(value, SymbolicInt) and not value.is_bool:
        return value.specialize()
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise tracer.error(f"{what} must be an int, got {value!r}")


def _template_args(tracer, kernel: CudaKernel, values: Sequence[Any]) -> tuple[TemplateArg, ...]:
    out = []
    for v in values:
        if isinstance(v, SymbolicInt):
            v = bool(v.specialize()) if v.is_bool else v.specialize()  # compile-time: guard on the value
        elif isinstance(v, torch.dtype):
            v = ctype(v)
        if not isinstance(v, (int, bool, str)):
            raise tracer.error(f"template argument {v!r} of {kernel.name}: expected an int, a bool, a C++ type "
                               "name or a torch.dtype")
        out.append(v)
    return tuple(out)


def _bind(tracer, kernel: CudaKernel, i: int, value: Any) -> tuple[Any, _plan.Binding]:
    """(kind, binding) of argument ``i``, specialised as the kernel asks (``CudaKernel(specialize=...)``):
    Triton's bits, cuTile's bits of each tensor's layout, or none (keys differ only in dtypes and integer
    widths)."""
    where = f"argument {i} of CUDA kernel {kernel.name}"
    triton = kernel.specialize == "triton"
    bound = value_binding(tracer, where, value, specialize=triton, specialize_alignment=triton,
                          specialize_layout=kernel.specialize == "cutile")
    if bound is not None:
        return bound
    if isinstance(value, torch.Tensor):
        raise tracer.error(f"{where} receives a tensor the op did not take or allocate")
    raise tracer.error(f"{where} receives an unsupported value {value!r} ({type(value).__name__}); CUDA kernels "
                       "take tensors (as pointers), ints and floats")


def record_launch(tracer, kernel: CudaKernel, grid: Any, block: Any, args: tuple, shared_mem: Any = 0,
                  template_args: Sequence[Any] = ()) -> _plan.LaunchStep:
    """Turns one launch of a CUDA C++ kernel in a traced body into a plan step."""
    site = body_location(*tracer.op.sources)
    block = tuple(block) if isinstance(block, (tuple, list)) else (block,)
    # A launch CUDA cannot make is the call's error on every path (the body run in Python fails the same way).
    if not 1 <= len(block) <= 3:
        raise tracer.error(f"CUDA kernel {kernel.name}: block {block!r}: 1 to 3 dimensions", kind=CallError)
    threads = tuple(_static_int(tracer, "block", b) for b in block) + (1,) * (3 - len(block))
    problem = _C.block_problem(threads)
    if problem:
        raise tracer.error(f"CUDA kernel {kernel.name}: {problem}", kind=CallError)
    shared = _static_int(tracer, "shared_mem", shared_mem)
    if shared < 0:
        raise tracer.error(f"CUDA kernel {kernel.name}: shared_mem = {shared} is negative", kind=CallError)
    kinds, bindings = [], []
    for i, value in enumerate(args):
        kind, binding = _bind(tracer, kernel, i, value)
        kinds.append(int(kind))
        bindings.append(binding)
    grid_exprs = grid_expressions(tracer, grid if isinstance(grid, (tuple, list)) else (grid,), kernel.name, site)
    config = CudaLaunchConfig(kernel, _template_args(tracer, kernel, template_args), threads, shared, tuple(kinds))
    return _plan.LaunchStep(kernel_id(kernel), config_id(config), grid_exprs, bindings, site)
