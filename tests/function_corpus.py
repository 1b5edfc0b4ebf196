"""The framework of the autograd.Function corpora (tests/functions_*.py): an entry is one public library's
``torch.autograd.Function``, applied unchanged in a torch_tile op body exactly as the library's own wrapper or
module applies it, with seeded cases and an independent torch reference. tests/test_function_corpus.py trains
through each (outputs and every input gradient) and compares the op with the library's own Function, bit for
bit, and with the reference."""

import threading
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import torch

import torch_tile

Tensor = torch.Tensor
f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16

# Tolerances against the torch reference (outputs and gradients), by the case's dtype (scaled per entry and case).
TOL = {f32: (1e-4, 1e-4), f16: (1e-2, 1e-2), bf16: (6e-2, 6e-2)}

NAMESPACE = "function_corpus"


@dataclass(frozen=True)
class FunctionCase:
    """One input set: ``make(device)`` builds the op's arguments afresh from a fixed seed (libraries write into
    their inputs and into gradients)."""

    id: str
    make: Callable[[torch.device], tuple]
    dtype: torch.dtype = f32
    gpu_only: str = ""  # why this case cannot run on the CPU path ("" if it can)
    tol_scale: float = 1.0
    python_backward: str = ""  # why this case's gradient runs in Python (as the entry's, for this case only)


@dataclass
class FunctionEntry:
    """One Function through one op. ``body``: the op body, applying the Function as the library does (its own
    wrapper's argument handling included); ``grads``: the argument positions whose gradients are compared (the
    tensors that need one); ``reference``: the same computation in plain torch (differentiable), on the same
    arguments; ``python_backward``: why the op's gradient runs in Python, where it does (expected, and counted as
    not native); ``gpu_only``: why the CPU path (Triton's interpreter) cannot run any case."""

    name: str
    library: str  # the distribution, pinned in scripts/env.sh
    function: str  # the Function's qualified name, for reports
    body: Callable
    reference: Callable
    cases: Sequence[FunctionCase]
    grads: tuple
    schema: Optional[str] = None
    mutates_args: tuple = ()
    python_backward: str = ""
    gpu_only: str = ""
    # Why the library itself refuses these calls on this machine's GPU and Triton ("" if it takes them).
    refused_on_this_gpu: str = ""
    # Why the library's own gradients are wrong on this machine's GPU and Triton ("" if right): there the op is held
    # to them bit for bit, and their distance from the torch reference is asserted instead of their closeness.
    wrong_on_this_gpu: str = ""
    tol_scale: float = 1.0
    # Why the CPU path (torch.compile's and torch.func's too) runs the gradient in Python where CUDA's native node
    # does not (what only the C++ node can keep: values read from the data).
    python_backward_off_cuda: str = ""
    # Why the library's own results differ from run to run on CUDA (atomic accumulation in its kernels): there the
    # op is held to the library's result within the tolerance, not bit for bit (Triton's interpreter is sequential).
    atomics: str = ""
    # Its kernels multiply float32 in tl.dot, which CUDA runs as TF32 unless told otherwise: float32 cases are held
    # to float16's tolerance against the torch reference there (the library's own result is as far from it).
    tf32: bool = False
    # Outputs that are not results to compare with the reference (workspace the Function returns), by position.
    unchecked_outputs: tuple = ()

    def __post_init__(self):
        self._op = None
        self._lock = threading.Lock()

    @property
    def qualname(self) -> str:
        return f"{NAMESPACE}::{self.name}"

    def op(self) -> torch_tile.TileOp:
        with self._lock:
            if self._op is None:
                self._op = torch_tile.op(self.qualname, self.body, mutates_args=self.mutates_args,
                                         schema=self.schema)
            return self._op


class Inputs:
    """Seeded tensors on a device (drawn on the CPU, so that every device gets the same values)."""

    def __init__(self, device, seed: int = 0):
        self.device = torch.device(device)
        self.gen = torch.Generator().manual_seed(seed)

    def randn(self, *shape, dtype=f32, scale: float = 1.0) -> Tensor:
        return (torch.randn(*shape, generator=self.gen) * scale).to(dtype=dtype, device=self.device)

    def rand(self, *shape, dtype=f32) -> Tensor:
        return torch.rand(*shape, generator=self.gen).to(dtype=dtype, device=self.device)

    def randint(self, low: int, high: int, shape, dtype=torch.int64) -> Tensor:
        return torch.randint(low, high, shape, generator=self.gen).to(dtype=dtype, device=self.device)
