"""Public libraries' autograd.Functions, unchanged, in torch_tile op bodies (the corpora tests/functions_*.py on
the framework of tests/function_corpus.py), trained: each case's outputs and every input gradient (of a seeded
weighted sum of the outputs) equal the library's own Function's on the same inputs, bit for bit, and the torch
reference's within the dtype's tolerance; the op's gradient runs natively (a plan's tape and gradient op) unless
the entry says why not. On CPU the op and the library's Function run their kernels in Triton's interpreter; on
CUDA the op runs its plans (one C++ autograd node per call, no fallback call).

A corpus whose library is not installed is skipped (scripts/env.sh installs them, pinned, --no-deps).
"""

import contextlib
import importlib
import warnings

import pytest
import torch

import torch_tile as tt
from torch_tile._launch_mode import launch_mode
from torch_tile.frontends.triton.interpret import InterpretLaunches

from function_corpus import TOL, f16, f32

CORPORA = ["functions_liger", "functions_fla", "functions_misc"]
DEVICE = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
# Said where a call's gradient does not run natively (C++ on CUDA, Python on CPU).
PYTHON_GRADIENT = ("differentiate in Python", "under autograd", "the backward runs in Python", "run the op body")


def _load() -> tuple[list, list]:
    """The entries of the installed corpora, and a skipped param per corpus whose library is not installed."""
    entries, missing = [], []
    for name in CORPORA:
        try:
            entries += importlib.import_module(name).ENTRIES
        except ImportError as e:
            missing.append(pytest.param(None, None, id=name, marks=pytest.mark.skip(reason=f"{name}: {e}")))
    return entries, missing


ENTRIES, MISSING = _load()
PARAMS = [pytest.param(e, c, id=f"{e.name}-{c.id}") for e in ENTRIES for c in e.cases] + MISSING


def _weighted_loss(outputs) -> torch.Tensor:
    """A seeded weighted sum of the floating outputs that need a gradient (the same weights for every run)."""
    gen = torch.Generator().manual_seed(1)
    loss = None
    for o in outputs:
        if isinstance(o, torch.Tensor) and o.is_floating_point() and o.requires_grad:
            term = (o.float() * torch.randn(o.shape, generator=gen).to(o.device)).sum()
            loss = term if loss is None else loss + term
    return loss


def _trained(fn, args: tuple, grads: tuple, interpreted: bool):
    """fn's outputs on ``args`` (the positions in ``grads`` needing a gradient) and those gradients."""
    args = [a.clone().requires_grad_() if i in grads else a.clone() if isinstance(a, torch.Tensor) else a
            for i, a in enumerate(args)]
    with launch_mode(InterpretLaunches()) if interpreted else contextlib.nullcontext():
        out = fn(*args)
        outputs = list(out) if isinstance(out, (tuple, list)) else [out]
        loss = _weighted_loss(outputs)
        if loss is not None:
            loss.backward()
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in outputs], [args[i].grad for i in grads]


def _close(got, want, tol, what: str) -> None:
    """``got`` within ``tol`` (rtol, atol; (0, 0): equal, NaNs included) of ``want``; where ``want`` is None (no
    gradient), none (or, against a reference, zeros)."""
    if want is None:
        assert got is None or (tol != (0, 0) and not got.any()), f"{what}: no gradient expected there"
        return
    rtol, atol = tol
    torch.testing.assert_close(got.to(want.dtype), want, rtol=rtol, atol=atol, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("entry,case", PARAMS)
def test_trains_as_the_library_does(entry, case):
    on_cpu = DEVICE.type == "cpu"
    if on_cpu and (entry.gpu_only or case.gpu_only):
        pytest.skip(entry.gpu_only or case.gpu_only)
    if not on_cpu and entry.refused_on_this_gpu:
        pytest.skip(entry.refused_on_this_gpu)
    op = entry.op()
    args = case.make(DEVICE)
    before = tt.runtime_counters()["fallback_calls"]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        outputs, grads = _trained(op, args, entry.grads, interpreted=False)
    python = [str(w.message) for w in said if any(p in str(w.message) for p in PYTHON_GRADIENT)]
    fallbacks = tt.runtime_counters()["fallback_calls"] - before
    want_outputs, want_grads = _trained(entry.body, case.make(DEVICE), entry.grads, interpreted=on_cpu)
    what = f"{entry.function}[{case.id}]"
    assert len(outputs) == len(want_outputs), what
    rtol, atol = TOL[f16 if entry.tf32 and not on_cpu and case.dtype == f32 else case.dtype]
    tol = (rtol * entry.tol_scale * case.tol_scale, atol * entry.tol_scale * case.tol_scale)
    # Bit for bit, unless the library's own result varies between runs (atomics on CUDA): then as close as torch.
    to_library = tol if entry.atomics and not on_cpu else (0, 0)
    for k, (got, want) in enumerate(zip(outputs, want_outputs)):
        _close(got, want, to_library, f"{what}: output {k} against the library's own")
    for i, got, want in zip(entry.grads, grads, want_grads):
        _close(got, want, to_library, f"{what}: gradient of argument {i} against the library's own")
    ref_outputs, ref_grads = _trained(entry.reference, case.make(DEVICE), entry.grads, interpreted=False)
    for k, (got, want) in enumerate(zip(outputs, ref_outputs)):
        if k not in entry.unchecked_outputs and isinstance(want, torch.Tensor):
            _close(got, want, tol, f"{what}: output {k} against torch")
    if not on_cpu and entry.wrong_on_this_gpu:  # the op's are the library's (above), which are far from torch's
        assert any(not torch.allclose(g.float(), r.float(), rtol=tol[0], atol=tol[1])
                   for g, r in zip(want_grads, ref_grads) if g is not None), \
            f"{what}: the library's gradients are right here; the entry says: {entry.wrong_on_this_gpu}"
    else:
        for i, got, want in zip(entry.grads, grads, ref_grads):
            _close(got, want, tol, f"{what}: gradient of argument {i} against torch")
    if entry.python_backward or case.python_backward or (on_cpu and entry.python_backward_off_cuda):
        return
    assert not python and fallbacks == 0, f"{what}: the gradient ran in Python: {python or fallbacks}"
    plan = op.trace(*[a.requires_grad_() if i in entry.grads else a for i, a in enumerate(case.make(DEVICE))])
    assert plan.backward is not None and plan.backward.gradient_op, f"{what}: {plan.backward and plan.backward.reason}"


def test_the_corpus_is_many_functions_of_many_libraries():
    if not ENTRIES:
        pytest.skip("no corpus library is installed")
    functions = {e.function for e in ENTRIES}
    libraries = {e.library for e in ENTRIES}
    native = [e for e in ENTRIES if not e.python_backward]
    assert len(functions) >= 30 and len(libraries) >= 5, (len(functions), sorted(libraries))
    assert len(native) >= 0.9 * len(ENTRIES), [(e.function, e.python_backward) for e in ENTRIES if e.python_backward]


def test_a_small_model_trains_as_with_the_library_alone():
    """A few optimizer steps of a model whose norm and activation are a library's Functions (fla's L2 norm and
    SwiGLU), through tile ops and applied directly: the same losses and weights, bit for bit."""
    entries = {e.name: e for e in ENTRIES}
    if not {"fla_l2norm", "fla_swiglu"} <= set(entries):
        pytest.skip("fla is not installed")
    norm, swiglu = entries["fla_l2norm"], entries["fla_swiglu"]

    def train(l2norm, act, interpreted: bool) -> list:
        gen = torch.Generator().manual_seed(7)
        weights = [torch.randn(*shape, generator=gen).to(DEVICE).requires_grad_() for shape in
                   ((16, 32), (32, 64), (32, 8))]
        x = torch.randn(12, 16, generator=gen).to(DEVICE)
        optimizer = torch.optim.SGD(weights, lr=0.1)
        losses = []
        for _ in range(3):
            with launch_mode(InterpretLaunches()) if interpreted else contextlib.nullcontext():
                optimizer.zero_grad()
                h = l2norm(x @ weights[0])
                gate, up = (h @ weights[1]).chunk(2, dim=-1)
                loss = (act(gate.contiguous(), up.contiguous()) @ weights[2]).pow(2).mean()
                loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        return [*losses, *(w.detach() for w in weights)]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback: both ops train natively
        got = train(norm.op(), swiglu.op(), interpreted=False)
    want = train(norm.body, swiglu.body, interpreted=DEVICE.type == "cpu")
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)
