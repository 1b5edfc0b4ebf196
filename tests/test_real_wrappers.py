"""Real host wrappers (Liger-Kernel, Triton's tutorials) called unchanged from
torch_tile op bodies: the corpus in tests/liger_corpus.py.

  * test_trace: every op traces into a launch plan (the tracer taking real code),
    or is refused with the error its entry names.
  * test_cpu: the op on CPU (the body under Triton's interpreter) against the
    torch reference (or: the call refused as test_trace says).
  * test_library_cpu: the library's own result on CPU (the wrapper called
    directly, its launches run by Triton's interpreter) against the torch
    reference: checks the corpus itself, independently of the tracer (refused
    entries too).
  * test_cuda: op result == library result (bit for bit where the entry is
    deterministic) and both match the torch reference (refused entries: the
    refusal, and the library against the reference).

The CPU tests (Triton's interpreter) run on machines without CUDA (CI); where
CUDA is, test_cuda runs the same cases instead.

Needs liger-kernel==0.8.5 (scripts/env.sh installs it, --no-deps); the module is
skipped without it.
"""

import contextlib
import re

import pytest
import torch

pytest.importorskip("liger_kernel", reason="needs liger-kernel==0.8.5 (scripts/env.sh installs it: pip install "
                                         "--no-deps liger-kernel==0.8.5)")

import torch_tile  # noqa: E402
from torch_tile._launch_mode import launch_mode  # noqa: E402
from torch_tile.frontends.triton.interpret import InterpretLaunches  # noqa: E402

from conftest import requires_cuda  # noqa: E402
from liger_corpus import ENTRIES  # noqa: E402
from wrapper_corpus import assert_matches, outputs  # noqa: E402


def _id(entry) -> str:
    return entry.qualname.replace("::", ".")


CASE_PARAMS = [pytest.param(e, c, id=f"{_id(e)}-{c.id}") for e in ENTRIES for c in e.cases]


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def _refused(entry, case):
    """A context that expects the case's refusal (its error, the message matching its regex), or None if the op
    is expected to work."""
    refusal = entry.refusal(case)
    if refusal is None:
        return None
    refused, because = refusal
    return _expect_refusal(refused, because, f"{entry.qualname}[{case.id}]")


@contextlib.contextmanager
def _expect_refusal(refused, because, what):
    try:
        yield
    except refused.error as e:
        assert re.search(refused.match, str(e)), (
            f"{what}: refused, but not as the corpus expects (/{refused.match}/; {because}): {e}")
    else:
        pytest.fail(f"{what}: the corpus expects torch_tile to refuse this ({because}), but it did not; if it is "
                    "supported now, update its refused/refused_because in tests/liger_corpus.py")


def _expect(entry, case, result, device, what):
    """The result against the entry's reference (or its property check), on fresh arguments."""
    args = case.make(device)
    if entry.check is not None:
        entry.check(result, args)
    else:
        assert_matches(result, entry.reference(*args), case, entry, what)


# -- tracing ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry,case", CASE_PARAMS)
def test_trace(entry, case):
    """op.trace(*args) on the case's arguments (CUDA tensors where there is a GPU, else CPU ones) returns a
    launch plan with at least one launch, or refuses the op as the entry (or case) says."""
    if entry.trace_needs_gpu and not torch.cuda.is_available():
        pytest.skip(entry.trace_needs_gpu)
    refused = _refused(entry, case)
    if refused is not None:
        with refused:
            entry.op().trace(*case.make(_device()))
        return
    plan = entry.op().trace(*case.make(_device()))
    assert isinstance(plan, torch_tile._C.LaunchPlan), f"trace returned {type(plan).__name__}"
    assert len(plan.launches) >= 1, "the plan launches nothing"


# -- CPU: Triton's interpreter ------------------------------------------------------------------------------


# Where CUDA is (the GPU machine: Triton 3.6 there, whose interpreter fails on some of these kernels with that
# machine's numpy), test_cuda runs these cases; the CPU-interpreter path is tested on machines without CUDA.
requires_no_cuda = pytest.mark.skipif(
    torch.cuda.is_available(),
    reason="CPU-interpreter path: run on machines without CUDA (CI); here test_cuda runs the same cases on the GPU",
)


def _skip_on_cpu(entry, case):
    if entry.cpu_skip:
        pytest.skip(entry.cpu_skip)
    if case.gpu_only:
        pytest.skip(case.gpu_only)


@requires_no_cuda
@pytest.mark.filterwarnings("ignore::RuntimeWarning:triton.runtime.interpreter")  # as test_library_cpu's
@pytest.mark.parametrize("entry,case", CASE_PARAMS)
def test_cpu(entry, case):
    refused = _refused(entry, case)
    if refused is not None:  # refused while tracing, before any kernel runs: whatever the interpreter can do
        with refused:
            entry.op()(*case.make(torch.device("cpu")))
        return
    _skip_on_cpu(entry, case)
    op = entry.op()
    args = case.make(torch.device("cpu"))
    result = op(*args)
    _expect(entry, case, result, torch.device("cpu"), f"{entry.qualname}[{case.id}] on CPU")


@requires_no_cuda
# numpy's warnings from inside Liger's kernels as Triton's interpreter runs them (exp of -inf minus -inf, fp16
# overflow in a cast): the library's own arithmetic, checked against the reference below.
@pytest.mark.filterwarnings("ignore::RuntimeWarning:triton.runtime.interpreter")
@pytest.mark.parametrize("entry,case", CASE_PARAMS)
def test_library_cpu(entry, case):
    """The wrapper itself (no torch_tile op), its launches run by Triton's interpreter."""
    _skip_on_cpu(entry, case)
    args = case.make(torch.device("cpu"))
    with launch_mode(InterpretLaunches()):
        result = entry.body(*args)
    _expect(entry, case, result, torch.device("cpu"), f"library {entry.wrapper}[{case.id}] on CPU (interpreted)")


# -- CUDA -------------------------------------------------------------------------------------------------------


@requires_cuda
@pytest.mark.parametrize("entry,case", CASE_PARAMS)
def test_cuda(entry, case):
    device = _device()
    library = entry.body(*case.make(device))  # the wrapper called directly: Triton launches it
    refused = _refused(entry, case)
    if refused is not None:
        with refused:
            entry.op()(*case.make(device))
        _expect(entry, case, library, device, f"library {entry.wrapper}[{case.id}] on CUDA")
        return
    op = entry.op()
    result = op(*case.make(device))
    what = f"{entry.qualname}[{case.id}] on CUDA"
    if entry.exact:
        got, want = outputs(result), outputs(library)
        assert len(got) == len(want), f"{what}: {len(got)} outputs, the library returns {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: output {i} differs from the library's"
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m: f"{what}: output {i} is not the library's, bit for bit: {m}")
    _expect(entry, case, library, device, f"library {entry.wrapper}[{case.id}] on CUDA")
    _expect(entry, case, result, device, what)
