"""Which tensor parameters a Triton kernel writes, read from its TTIR with the
analysis torch itself uses for ``torch.library.triton_op`` and Inductor. The
tracer uses it to hold an op's declared ``mutates_args`` to what its kernels do:
an undeclared write would be silently lost under functionalization, and a
declared write that never happens makes torch.compile copy for nothing."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Optional

import torch

_LOGGER = "torch._dynamo"  # where torch's analysis logs, if the module does not say


class _CompileOnlyDriver:
    """Stands in for Triton's driver on a machine without a GPU: the analysis
    only needs a target to build TTIR for (tile ops target sm_90 there)."""

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)


@contextlib.contextmanager
def _analysis_target():
    import triton

    driver = triton.runtime.driver
    try:
        driver.active.get_current_target()
        yield
        return
    except RuntimeError:  # no active driver: no GPU here
        pass
    # torch lays out host tensor descriptors' TTIR parameters only when it
    # believes the device has TMA; the sm_90 target here does.
    import torch.utils._triton as torch_triton

    supports_descriptors = torch_triton.has_triton_tensor_descriptor_host_tma
    driver.set_active(_CompileOnlyDriver())
    torch_triton.has_triton_tensor_descriptor_host_tma = lambda: True
    try:
        yield
    finally:
        torch_triton.has_triton_tensor_descriptor_host_tma = supports_descriptors
        driver.set_active(None)  # back to "no driver yet" (reset_active() would raise without a GPU)


class _FallbackSeen(logging.Filter):
    """torch's analysis logs and assumes "every input is mutated" when it
    cannot analyse a kernel (e.g. impure inline asm such as PDL's
    griddepcontrol); that answer must not be taken as the truth."""

    def __init__(self):
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if "assuming every input is mutated" in record.getMessage():
            self.seen = True
            return False
        return True


def _concrete(value: Any) -> Any:
    from ._descriptors import tensor_of
    from ._tracer import TensorProxy, concrete

    value = tensor_of(value)  # torch's analysis rebuilds a descriptor from its tensor (descriptor metadata)
    if isinstance(value, TensorProxy):
        return torch.empty(16, dtype=value.dtype)  # only dtype and (aligned) address matter
    return concrete(value)


def _descriptor_metadata(arguments: dict[str, Any]) -> dict:
    """torch's metadata for descriptor arguments (passed to it as their tensors)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from ._descriptors import check_block_shape

    return {name: ("stable", (list(check_block_shape(name, d.block_shape, len(d.block_shape), ValueError)),))
            for name, d in arguments.items() if isinstance(d, TensorDescriptor)}


def written_parameters(kernel, arguments: dict[str, Any]) -> Optional[frozenset[str]]:
    """Names of the kernel's tensor parameters that it stores to (or updates
    atomically), for these bound arguments; None when it cannot be analysed."""
    from torch._higher_order_ops import triton_kernel_wrap as wrap

    kwargs = {name: _concrete(v) for name, v in arguments.items()}
    descriptors = _descriptor_metadata(arguments)
    seen = _FallbackSeen()
    # The module logs its fallback on its own logger (torch._dynamo in current
    # torch); make sure the warning is emitted so that the filter sees (and drops) it.
    logger = getattr(wrap, "log", None) or logging.getLogger(_LOGGER)
    level = logger.level
    if not logger.isEnabledFor(logging.WARNING):
        logger.setLevel(logging.WARNING)
    logger.addFilter(seen)
    try:
        with _analysis_target():
            if hasattr(wrap, "identify_accessed_tensors"):  # torch >= 2.12
                accesses = wrap.identify_accessed_tensors(kernel, kwargs, descriptors)
                names = [d.name for d in accesses.read_writes.writes]
            else:
                names = wrap.identify_mutated_tensors(kernel, kwargs, descriptors)
    except Exception:  # noqa: BLE001 - an analysis failure must not fail the op
        return None
    finally:
        logger.removeFilter(seen)
        logger.setLevel(level)
    if seen.seen:
        return None
    return frozenset(n for n in names if isinstance(kwargs.get(n), torch.Tensor))
