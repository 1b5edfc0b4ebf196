"""Real host wrappers of public Triton libraries called unchanged from torch_tile
op bodies: the corpora in tests/liger_corpus.py (Liger-Kernel, Triton's
tutorials) and tests/corpus_*.py (one library each), on the framework of
tests/wrapper_corpus.py.

  * test_trace: every op traces into a launch plan (the tracer taking real code),
    or its trace raises the error its entry names (no plan holds it).
  * test_cpu: the op on CPU (the body under Triton's interpreter) against the
    torch reference; an op no plan holds runs by its fallback (counted, with the
    entry's reason) and must still be right, unless its error is one that never
    falls back (the op or the call is wrong): then the call raises it.
  * test_library_cpu: the library's own result on CPU (the wrapper called
    directly, its launches run by Triton's interpreter) against the torch
    reference: checks the corpus itself, independently of the tracer.
  * test_cuda: op result == library result (bit for bit where the entry is
    deterministic) and both match the torch reference; fallbacks as on CPU.

The CPU tests (Triton's interpreter) run on machines without CUDA (CI); where
CUDA is, test_cuda runs the same cases instead. A corpus whose library is not
installed is skipped (scripts/env.sh installs them, pinned, --no-deps).
"""

import importlib
import re

import pytest
import torch

import torch_tile
from torch_tile._launch_mode import launch_mode
from torch_tile.frontends.triton.interpret import InterpretLaunches

from conftest import requires_cuda
from wrapper_corpus import assert_matches, assert_same_as_library

CORPORA = ["liger_corpus", "corpus_fla", "corpus_conch", "corpus_cut_cross_entropy", "corpus_torchao"]


def _params() -> list:
    params = []
    for name in CORPORA:
        try:
            entries = importlib.import_module(name).ENTRIES
        except (ImportError, pytest.skip.Exception) as e:  # the library is not installed here
            params.append(pytest.param(None, None, id=name, marks=pytest.mark.skip(reason=f"{name}: {e}")))
            continue
        params += [pytest.param(e, c, id=f"{e.qualname.replace('::', '.')}-{c.id}") for e in entries for c in e.cases]
    return params


CASE_PARAMS = _params()


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")


def _expect(entry, case, result, device, what):
    """The result against the entry's reference (or its property check), on fresh arguments."""
    args = case.make(device)
    if entry.check is not None:
        entry.check(result, args)
    else:
        assert_matches(result, entry.reference(*args), case, entry, what)


def _call(entry, case, device):
    """The op called on the case's arguments; where no plan holds the case, checks how the call goes instead:
    through the fallback (returns its result, which the caller checks), or the refusal (returns None)."""
    op = entry.op()
    refusal = entry.refusal(case)
    what = f"{entry.qualname}[{case.id}]"
    if refusal is None:
        return op(*case.make(device))
    refused, because = refusal
    if not refused.falls_back:
        with pytest.raises(refused.error) as info:
            op(*case.make(device))
        assert re.search(refused.match, str(info.value)), f"{what}: refused, but not as expected: {info.value}"
        return None
    before = dict(op.fallback_calls)
    result = op(*case.make(device))
    new = [why for why, n in op.fallback_calls.items() if n > before.get(why, 0)]
    assert new, f"{what}: the corpus expects a fallback ({because}), but the call ran a native plan"
    assert any(re.search(refused.match, why) for why in new), f"{what}: fell back for another reason: {new}"
    return result


# -- tracing ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry,case", CASE_PARAMS)
def test_trace(entry, case):
    """op.trace(*args) on the case's arguments (CUDA tensors where there is a GPU, else CPU ones) returns a
    launch plan with at least one launch, or raises the error the entry (or case) names."""
    if entry.trace_needs_gpu and not torch.cuda.is_available():
        pytest.skip(entry.trace_needs_gpu)
    if entry.trace_runs_body and (entry.cpu_skip or case.gpu_only) and not torch.cuda.is_available():
        pytest.skip(f"{entry.trace_runs_body}, and this case runs on a GPU only")
    refusal = entry.refusal(case)
    if refusal is not None:
        refused, because = refusal
        with pytest.raises(refused.error) as info:
            entry.op().trace(*case.make(_device()))
        assert re.search(refused.match, str(info.value)), (
            f"{entry.qualname}[{case.id}]: no plan, but not for the corpus's reason (/{refused.match}/; {because}): "
            f"{info.value}")
        return
    plan = entry.op().trace(*case.make(_device()))
    assert isinstance(plan, torch_tile._C.LaunchPlan), f"trace returned {type(plan).__name__}"
    assert not plan.fallback and (plan.launches or plan.aten_steps), "the plan does nothing"


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
@pytest.mark.filterwarnings("ignore:torch_tile.*run the op body in Python:RuntimeWarning")  # counted by _call
@pytest.mark.parametrize("entry,case", CASE_PARAMS)
def test_cpu(entry, case):
    _skip_on_cpu(entry, case)
    result = _call(entry, case, torch.device("cpu"))
    if result is not None:
        _expect(entry, case, result, torch.device("cpu"), f"{entry.qualname}[{case.id}] on CPU")


@requires_no_cuda
# numpy's warnings from inside the libraries' kernels as Triton's interpreter runs them (exp of -inf minus -inf,
# fp16 overflow in a cast): the library's own arithmetic, checked against the reference below.
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
    _expect(entry, case, library, device, f"library {entry.wrapper}[{case.id}] on CUDA")
    result = _call(entry, case, device)
    if result is None:
        return
    what = f"{entry.qualname}[{case.id}] on CUDA"
    if entry.exact:
        assert_same_as_library(result, library, what)
    _expect(entry, case, result, device, what)
