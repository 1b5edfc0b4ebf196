"""The framework of the real-wrapper corpora (tests/corpus_*.py): an entry is one
torch_tile op whose body calls a public library's host wrapper unchanged, with
seeded cases and an independent torch reference; tests/test_real_wrappers.py
compares the op, the library's own call and the reference."""

import threading
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence, Tuple

import torch

import torch_tile

Tensor = torch.Tensor
f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16

# Tolerances against the fp32 torch reference, by the case's input dtype (scaled per entry).
TOL = {f32: (1e-4, 1e-4), f16: (1e-2, 1e-2), bf16: (6e-2, 2e-2)}
# An fp8 output is a quantization: math that is as valid in another order (the GPU's fp16, fused) may round an element
# to the neighbouring e4m3 value, one step of 2**-3 relative. (On CUDA the op is also held to the library's own
# output bit for bit.)
FP8_QUANTIZATION_RTOL = 2.0 ** -3
# On a GPU, Triton's tl.dot takes float32 inputs as TF32 unless told otherwise (input_precision="tf32"): TF32 keeps
# float16's 10-bit mantissa, so a float32 case of an entry whose kernels multiply so gets float16's tolerance there.
TOL_TF32 = TOL[f16]


# -- the data -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One input set. ``make(device)`` builds the op's arguments afresh (several
    wrappers write into their inputs), from a fixed seed."""

    id: str
    make: Callable[[torch.device], tuple]
    dtype: torch.dtype = f32  # the main input's dtype: picks the tolerance
    gpu_only: str = ""  # why this case cannot run on the CPU path ("" if it can)
    tol_scale: float = 1.0  # times the entry's: a case whose own numerics need more room (said where it is set)
    refused: Optional["Refusal"] = None  # no plan holds this case (overrides the entry's)
    refused_because: str = ""  # one line: why no plan holds it


@dataclass(frozen=True)
class Refusal:
    """Why no launch plan holds an op (or a case): the error its trace raises and a regex on the message that
    names the mechanism. Calls still run, by the fallback (the body in Python), unless the error says the op or
    the call itself is wrong (``falls_back`` is False): then the call raises it too."""

    error: type
    match: str
    # Whether calls fall back (None: a TraceError that does not say the op or the call is wrong does); an error
    # the body itself raises while traced (not a TraceError) falls back too.
    fallback: Optional[bool] = None

    @property
    def falls_back(self) -> bool:
        if self.fallback is not None:
            return self.fallback
        return issubclass(self.error, torch_tile.TraceError) and not issubclass(
            self.error, (torch_tile.OpDefinitionError, torch_tile.CallError))


# Why no plan holds some real wrappers (the mechanisms; each entry using one says why it applies).
TAKES_ITS_OWN_GRADIENT = Refusal(RuntimeError, r"does not require grad|does not have a grad_fn", fallback=True)
READS_FLOAT = Refusal(torch_tile.TraceError,
                      r"value from the tensors' data; a launch plan reads integers and bools only")


def refused(case: Case, refusal: Refusal, because: str) -> Case:
    """The case, which no plan holds (while the entry's other cases are native)."""
    return replace(case, refused=refusal, refused_because=because)


@dataclass
class Entry:
    name: str  # the op is torch.ops.<namespace>.<name>
    wrapper: str  # what the body calls, for reports
    body: Callable  # the op body: the wrapper called as the library calls it
    reference: Optional[Callable]  # independent torch implementation: the body's outputs, from the same arguments
    cases: Sequence[Case]
    namespace: str = "liger"
    mutates_args: Tuple[str, ...] = ()
    tol_scale: float = 1.0
    tf32: bool = False  # its kernels' tl.dot take float32 as TF32 on CUDA (Triton's default): see TOL_TF32
    cpu_skip: str = ""  # why the CPU path (Triton's interpreter) cannot run this entry at all
    exact: bool = True  # on CUDA the op's outputs equal the library's bit for bit (same kernels, same variants)
    check: Optional[Callable] = None  # for outputs without a deterministic reference: check(outputs, args)
    notes: str = ""  # what in the wrapper a tracer has to handle
    refused: Optional[Refusal] = None  # no plan holds any case of this op (None: native)
    refused_because: str = ""  # one line: why no plan holds it
    trace_needs_gpu: str = ""  # why even tracing the body needs a GPU ("" if it does not)
    # What the trace learns from one run of the body (values it reads from the data): the trace of a case that
    # cannot run on the CPU path then needs a GPU too ("" if the body reads no data).
    trace_runs_body: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self):
        for where, r, because in [(self.name, self.refused, self.refused_because)] + [
                (f"{self.name}[{c.id}]", c.refused, c.refused_because) for c in self.cases]:
            assert (r is None) == (not because), f"{where}: refused and refused_because go together"

    @property
    def qualname(self) -> str:
        return f"{self.namespace}::{self.name}"

    def refusal(self, case: Case) -> Optional[Tuple[Refusal, str]]:
        """The refusal expected for this case (the case's own, else the entry's), with its reason; None if the
        op is expected to work."""
        if case.refused is not None:
            return case.refused, case.refused_because
        if self.refused is not None:
            return self.refused, self.refused_because
        return None

    def op(self):
        """The registered torch_tile op (registered on first use; a definition
        that torch_tile refuses raises here, every time)."""
        with self._lock:
            if self.qualname not in _REGISTERED:
                try:
                    _REGISTERED[self.qualname] = torch_tile.op(self.qualname, self.body,
                                                               mutates_args=self.mutates_args)
                except Exception as e:  # noqa: BLE001 - kept and re-raised: one entry's failure is its own
                    _REGISTERED[self.qualname] = e
        result = _REGISTERED[self.qualname]
        if isinstance(result, Exception):
            raise result
        return result


_REGISTERED: dict = {}


def outputs(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def assert_matches(actual, expected, case: Case, entry: Entry, what: str) -> None:
    """Same number of outputs, dtypes, shapes; values within the case's tolerance."""
    actual, expected = outputs(actual), outputs(expected)
    assert len(actual) == len(expected), f"{what}: {len(actual)} outputs, expected {len(expected)}"
    tf32 = entry.tf32 and case.dtype == f32 and any(a.is_cuda for a in actual)
    atol, rtol = (entry.tol_scale * case.tol_scale * t for t in (TOL_TF32 if tf32 else TOL.get(case.dtype, (0, 0))))
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype, f"{what}: output {i} has dtype {a.dtype}, expected {e.dtype}"
        assert a.shape == e.shape, f"{what}: output {i} has shape {tuple(a.shape)}, expected {tuple(e.shape)}"
        if not a.dtype.is_floating_point:
            assert torch.equal(a, e), f"{what}: output {i} differs"
        else:
            fp8 = a.dtype.itemsize == 1
            torch.testing.assert_close(a.float(), e.float(), atol=atol,
                                       rtol=max(rtol, FP8_QUANTIZATION_RTOL) if fp8 else rtol,
                                       msg=lambda m, i=i: f"{what}: output {i}: {m}")


# -- inputs ---------------------------------------------------------------------------------------------


class Inputs:
    """Seeded random tensors on one device (drawn on CPU, so every device sees the same values)."""

    def __init__(self, device, seed: int = 0):
        self.device = torch.device(device)
        self.g = torch.Generator().manual_seed(seed)

    def randn(self, *shape, dtype=f32, scale=1.0):
        return (torch.randn(*shape, generator=self.g) * scale).to(dtype=dtype, device=self.device)

    def rand(self, *shape, dtype=f32):
        return torch.rand(*shape, generator=self.g).to(dtype=dtype, device=self.device)

    def randint(self, high, *shape, dtype=torch.int64):
        return torch.randint(0, high, shape, generator=self.g).to(dtype=dtype, device=self.device)


def strided(t: Tensor) -> Tensor:
    """The same values in a non-contiguous layout (last two dimensions stored transposed)."""
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


def assert_same_as_library(result, library, what: str) -> None:
    """The op's outputs are the library's own, bit for bit (an ``exact`` entry on CUDA: same kernels, variants)."""
    got, want = outputs(result), outputs(library)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, the library returns {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: output {i} differs from the library's"
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m: f"{what}: output {i} is not the library's, bit for bit: {m}")
