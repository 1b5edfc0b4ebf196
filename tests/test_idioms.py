"""Idioms of real host wrappers, each a small op body written the way kernel
libraries write it, checked against the same code run without torch_tile:

* a ``torch.library.triton_op`` body, unchanged (``wrap_triton(kernel)[grid](...)``);
* an ``autograd.Function`` called with ``.apply`` (forward native; its own backward for gradients);
* helpers that keep what they are given (``functools.lru_cache``, memo dicts, module globals);
* what no launch plan holds (``.item()``, a data-dependent branch): a fallback, warned, counted, explained;
* a ``torch.compile``'d helper called in the body.

On CPU (Triton's interpreter) everywhere; on CUDA too where there is a GPU.
"""

import contextlib
import functools
import json
import random
import subprocess
import sys
import warnings

from typing import Optional

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._library.triton import set_wrap_triton_enabled
from torch.library import wrap_triton
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import ASTSource

import torch_tile as tt
from torch_tile.trace.expr import Op, substitute
from torch_tile._launch_mode import launch_mode
from torch_tile.frontends.triton.interpret import InterpretLaunches

NS = "idioms"
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


def _scaled(x: torch.Tensor, scale: float, block: int = 128) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, block),)](x, out, n, scale, BLOCK=block)
    return out


def _fallback_calls() -> int:
    return tt.runtime_counters()["fallback_calls"]


def _without_torch_tile(device: str):
    """Where the library's own call launches its kernels: the GPU, or on CPU Triton's interpreter."""
    return launch_mode(InterpretLaunches()) if device == "cpu" else contextlib.nullcontext()


# -- torch.library.triton_op bodies ---------------------------------------------------------------------------


def _triton_op_body(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(_scale_kernel)[(triton.cdiv(n, 64),)](x, out, n, 2.0, BLOCK=64)
    return out


wrapped = tt.op(f"{NS}::wrapped", _triton_op_body, fallback=False)


@pytest.mark.parametrize("device", DEVICES)
def test_a_triton_op_body_runs_unchanged(device):
    x = torch.randn(1000, device=device)
    plan = wrapped.trace(x)
    assert [launch.kernel_name for launch in plan.launches] == ["_scale_kernel"]
    torch.testing.assert_close(wrapped(x), 2 * x)
    if device == "cuda":  # the same body as torch.library registers it
        reference = torch.library.triton_op(f"{NS}_reference::wrapped", _triton_op_body, mutates_args=())
        torch.testing.assert_close(wrapped(x), reference(x), rtol=0, atol=0)


# -- autograd.Function.apply ----------------------------------------------------------------------------------


class _ScaleFunction(torch.autograd.Function):
    """A library's entry point: forward launches the kernel, backward is the library's own."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.save_for_backward(x)
        return _scaled(x, scale)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.scale + 0 * x, None


class _ScaleWithSetupContext(torch.autograd.Function):
    """The newer style: forward without ctx, setup_context separate."""

    @staticmethod
    def forward(x, scale):
        return _scaled(x, scale)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.scale = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


@tt.op(f"{NS}::function_apply")
def function_apply(x: torch.Tensor, scale: float) -> torch.Tensor:
    return _ScaleFunction.apply(x, scale)


@tt.op(f"{NS}::function_with_setup_context")
def function_with_setup_context(x: torch.Tensor, scale: float) -> torch.Tensor:
    return _ScaleWithSetupContext.apply(x, scale)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", [function_apply, function_with_setup_context], ids=lambda op: op.name)
def test_an_autograd_function_in_a_body_runs_natively_and_keeps_its_backward(op, device):
    x = torch.randn(300, device=device)
    plan = op.trace(x, 3.0)  # the forward, inline: a plan with its launch (no fallback)
    assert not plan.fallback and [launch.kernel_name for launch in plan.launches] == ["_scale_kernel"]
    before = _fallback_calls()
    torch.testing.assert_close(op(x, 3.0), 3 * x)
    assert _fallback_calls() == before
    leaf = x.clone().requires_grad_()
    out = op(leaf, 3.0)
    assert out.grad_fn is not None
    (out * torch.arange(300.0, device=device)).sum().backward()
    torch.testing.assert_close(leaf.grad, 3 * torch.arange(300.0, device=device))  # the Function's own backward
    # The same, without torch_tile.
    direct = x.clone().requires_grad_()
    with _without_torch_tile(device):
        (_ScaleFunction.apply(direct, 3.0) * torch.arange(300.0, device=device)).sum().backward()
    torch.testing.assert_close(leaf.grad, direct.grad)


@tt.op(f"{NS}::scaled_and_its_input")
def scaled_and_its_input(x: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """A library's block that also hands back its input (mamba's prenorm with no residual)."""
    return _ScaleFunction.apply(x, scale), x


@pytest.mark.parametrize("device", DEVICES)
def test_a_body_returning_its_input_trains_through_the_function_and_its_plan_says_why(device):
    plan = scaled_and_its_input.trace(torch.randn(30).requires_grad_(), 2.0)
    assert not plan.backward.gradient_op and plan.backward.reason == "the body returns its inputs (or views of them)"
    x = torch.randn(30, device=device, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="the body returns its inputs"):
        scaled, same = scaled_and_its_input(x, 2.0)
    (scaled.sum() + 3 * same.sum()).backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 5.0))


def test_an_op_without_a_function_still_says_it_has_no_backward():
    op = tt.op(f"{NS}::plain_scaled", lambda x: _scaled(x, 2.0), schema="(Tensor x) -> Tensor")
    out = op(torch.randn(10, requires_grad=True))
    with pytest.raises(RuntimeError, match=rf"{NS}::plain_scaled has no backward"):
        out.sum().backward()


# -- what helpers keep ------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _launch_config(n: int) -> dict:
    """A library's cached helper: a JSON-able config per size."""
    return {"BLOCK": triton.next_power_of_2(min(n, 1024)), "n": n}


_MEMO: dict = {}
_LAST = {"n": None}
_KEYED: dict = {}  # keyed by nested tuples of sizes, as FlagGems' launch cache is


def _memo_block(n: int) -> tuple:
    if n not in _MEMO:
        _MEMO[n] = (triton.next_power_of_2(n), n // 2)
    _LAST["n"] = n
    _KEYED[(("n", n), ("half", n // 2))] = n
    return _MEMO[n]


@tt.op(f"{NS}::cached_configs")
def cached_configs(x: torch.Tensor, scale: float) -> torch.Tensor:
    block = _launch_config(x.numel())["BLOCK"]
    _memo_block(x.numel())
    return _scaled(x, scale, block)


def _tensor_cache(fn):
    """fla's ``tensor_cache``: the results of the last calls, found by the identity of their tensor arguments."""
    entries = []

    def cached(*args):
        for last_args, result in entries:
            if len(args) == len(last_args) and all(a is b for a, b in zip(args, last_args)):
                return result
        result = fn(*args)
        entries.append((args, result))
        del entries[:-4]
        return result

    return cached


@_tensor_cache
def _lengths(offsets: torch.Tensor) -> torch.Tensor:
    return offsets[1:] - offsets[:-1]


@_tensor_cache
def _starts_of_chunks(offsets: torch.Tensor, chunk: int) -> torch.Tensor:
    return torch.cumsum(triton.cdiv(_lengths(offsets), chunk), 0)


@tt.op(f"{NS}::chunk_starts")
def chunk_starts(x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    return _scaled(x, 1.0) + _starts_of_chunks(offsets, 4).sum()


@_tensor_cache
def _chunk_table(offsets: torch.Tensor, chunk: int) -> torch.Tensor:
    """fla's ``prepare_chunk_indices`` as its older releases build it: on the host, then moved to the device."""
    indices = torch.cat([torch.arange(n) for n in triton.cdiv(_lengths(offsets), chunk).tolist()])
    return torch.stack([indices.eq(0).cumsum(0) - 1, indices], 1).to(offsets)


@tt.op(f"{NS}::chunk_count")
def chunk_count(x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    return _scaled(x, 1.0) + _chunk_table(offsets, 4).shape[0]


@tt.op(f"{NS}::chunk_count_2")
def chunk_count_2(x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    return _scaled(x, 2.0) + _chunk_table(offsets, 4).shape[0]


@tt.op(f"{NS}::cached_configs_2")
def cached_configs_2(scale: float, y: torch.Tensor) -> torch.Tensor:
    block = _launch_config(y.size(0))["BLOCK"]  # the same helper, from another op (other argument positions)
    return _scaled(y, scale, block)


def test_a_cache_keyed_by_tensor_identity_keeps_no_tensor_of_a_trace():
    x, offsets = torch.randn(10), torch.tensor([0, 5, 40])
    want = x + 13  # chunks of 4: 2 and 9, starting at 2 and 11
    torch.testing.assert_close(chunk_starts(x, offsets), want)
    chunk_starts.trace(x, offsets)
    # The library's own later calls with the same tensor get a real tensor (or compute one), as eagerly.
    assert type(_lengths(offsets)) is torch.Tensor and _lengths(offsets).tolist() == [5, 35]
    assert type(_starts_of_chunks(offsets, 4)) is torch.Tensor
    torch.testing.assert_close(chunk_starts(x, offsets), want)


def test_ops_sharing_a_helper_cached_by_tensor_identity_that_reads_the_data_stay_native():
    x, offsets = torch.randn(10), torch.tensor([0, 5, 40])
    fallbacks = tt.runtime_counters()["fallback_calls"]
    for op, scale in ((chunk_count, 1.0), (chunk_count_2, 2.0)):  # the second finds the first's entry in the cache
        torch.testing.assert_close(op(x, offsets), scale * x + 11)  # 2 + 9 chunks of 4
        assert not op.trace(x, offsets).fallback
        torch.testing.assert_close(op(x, torch.tensor([0, 12, 40])), scale * x + 10)  # the plan reads them again
    assert tt.runtime_counters()["fallback_calls"] == fallbacks


def test_nothing_a_trace_makes_stays_in_user_state():
    _launch_config.cache_clear()
    _MEMO.clear()
    _KEYED.clear()
    x = torch.randn(100)
    torch.testing.assert_close(cached_configs(x, 2.0), 2 * x)
    cached_configs.trace(x, 2.0)
    # The library's own later calls get plain values, as if it had only ever been called eagerly.
    assert json.dumps(_launch_config(100)) == '{"BLOCK": 128, "n": 100}'
    assert _MEMO == {100: (128, 50)} and all(type(v) is int for v in (*_MEMO, *_MEMO[100]))
    assert type(_LAST["n"]) is int
    assert _KEYED == {(("n", 100), ("half", 50)): 100}
    assert all(type(v) is int for key in _KEYED for _, v in key) and type(_KEYED[(("n", 100), ("half", 50))]) is int
    # Another op calling the same helper: its plan reads its own arguments.
    y = torch.randn(100)
    torch.testing.assert_close(cached_configs_2(3.0, y), 3 * y)
    plan = cached_configs_2.trace(3.0, y)
    assert all("x." not in guard.text for guard in plan.guards)


# -- a plan serves the call that traced it -------------------------------------------------------------------------


def _checked_copy(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    # Checks libraries make on the outputs they allocate: guards over the arguments, before the output exists.
    assert out.is_contiguous() and out.stride(0) == x.stride(0) and out.numel() == x.numel()
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 128),)](x, out, n, 1.0, BLOCK=128)
    return out


checked_copy = tt.op(f"{NS}::checked_copy", _checked_copy, fallback=False)


def test_a_plan_serves_the_call_that_traced_it():
    x = torch.randn(6, 40)
    plan = checked_copy.trace(x)
    read = set()
    slot_reads = (Op.SIZE, Op.STRIDE, Op.NUMEL)
    for guard in plan.guards:  # the slots guards read: the argument's only (the output's layout is the argument's)
        substitute(guard.code, lambda atom: read.add(atom[1]) if Op(atom[0]) in slot_reads else None)
    assert read == {0}
    # C++ selects the plan for the same call (the dry run of a CUDA call; it refuses a plan that misses its call).
    assert len(tt._C.variant_keys(checked_copy.qualname, (x,), {})) == 1
    torch.testing.assert_close(checked_copy(x), x)


# -- what no plan holds: a fallback -----------------------------------------------------------------------------


def _scaled_by_max(x: torch.Tensor) -> torch.Tensor:
    return _scaled(x, float(x.abs().max().item()))  # a host value read from the data (a loss's normalizer, ...)


# One op per device: the warning is given once per op and reason.
scaled_by_max = {device: tt.op(f"{NS}::scaled_by_max_{device}", _scaled_by_max) for device in DEVICES}
scaled_by_max_strict = tt.op(f"{NS}::scaled_by_max_strict", _scaled_by_max, fallback=False)


@pytest.mark.parametrize("device", DEVICES)
def test_a_body_no_plan_holds_falls_back_warned_counted_and_explained(device):
    x = torch.randn(256, device=device)
    op = scaled_by_max[device]
    expected = x * x.abs().max()
    before = _fallback_calls()
    with pytest.warns(RuntimeWarning, match=rf"{op.qualname}: calls like this one run the op body in Python "
                                            r".*test_idioms.py:\d+: `aten.item.default`"):
        torch.testing.assert_close(op(x), expected)
    torch.testing.assert_close(op(2 * x), 2 * x * (2 * x).abs().max())
    assert _fallback_calls() == before + 2
    report = tt.explain(op)
    assert any("aten.item.default" in why for why in report.fallbacks)
    assert "fallback" in str(report)
    with pytest.raises(tt.TraceError, match=rf"{NS}::scaled_by_max_strict: .*`aten.item.default`"):
        scaled_by_max_strict(x)


def _loss_and_its_gradient(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # A training step's forward and backward in one call, as libraries write it: the body takes its own gradient.
    w = w.detach().requires_grad_(True)
    with torch.enable_grad():
        loss = _ScaleFunction.apply(x @ w, 0.5).square().sum()  # the library's Function: its own backward
        (dw,) = torch.autograd.grad(loss, (w,))
    return loss.detach(), dw


# One op per device: the warning is given once per op and reason.
loss_and_its_gradient = {device: tt.op(f"{NS}::loss_and_its_gradient_{device}", _loss_and_its_gradient)
                         for device in DEVICES}


@pytest.mark.parametrize("device", DEVICES)
def test_a_fallback_body_that_takes_its_own_gradient_runs_with_autograd(device):
    # The op's kernel runs below autograd; the body run per call runs as its caller would run it.
    x, w = torch.randn(8, 4, device=device), torch.randn(4, 3, device=device)
    with pytest.warns(RuntimeWarning, match="run the op body in Python"):
        loss, dw = loss_and_its_gradient[device](x, w)
    reference_w = w.clone().requires_grad_(True)
    reference = (0.5 * (x @ reference_w)).square().sum()
    reference.backward()
    torch.testing.assert_close(loss, reference.detach())
    torch.testing.assert_close(dw, reference_w.grad)
    # The caller's keys, not more: under inference mode the body fails in the op as it fails called directly.
    with torch.inference_mode(), _without_torch_tile(device), pytest.raises(RuntimeError) as direct:
        _loss_and_its_gradient(x, w)
    with torch.inference_mode(), pytest.raises(RuntimeError) as in_the_op:
        loss_and_its_gradient[device](x, w)
    assert str(in_the_op.value).startswith(str(direct.value))


def _returns_its_input_past_a_data_read(x: torch.Tensor) -> torch.Tensor:
    return x if x.sum().item() > float("-inf") else x.clone()


def _returns_a_view_of_its_input_past_a_data_read(x: torch.Tensor) -> torch.Tensor:
    return x[1:] if x.sum().item() > float("-inf") else x.clone()


def _returns_two_views_of_one_tensor_past_a_data_read(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = x * 2
    return (out[:, :3], out[:, 1:]) if x.sum().item() > float("-inf") else (out.clone(), out.clone())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("body", [_returns_its_input_past_a_data_read, _returns_a_view_of_its_input_past_a_data_read])
def test_a_fallback_returns_copies_of_its_inputs_and_their_views(device, body):
    op = tt.op(f"{NS}::alias_{body.__name__.strip('_')}_{device}", body)
    x = torch.randn(4, device=device)
    out = op(x)
    assert out.data_ptr() != x.data_ptr() and torch.equal(out, body(x)) and out.stride() == body(x).stride()


@pytest.mark.parametrize("device", DEVICES)
def test_a_fallback_returns_views_of_one_tensor_each_in_its_own_memory(device):
    op = tt.op(f"{NS}::two_views_past_a_data_read_{device}", _returns_two_views_of_one_tensor_past_a_data_read)
    x = torch.randn(3, 5, device=device)
    left, right = op(x)
    assert _own_memory(left, right, x) and left.stride() == right.stride() == (5, 1)
    torch.testing.assert_close((left, right), (2 * x[:, :3], 2 * x[:, 1:]))
    assert op.fallback_calls


@triton.jit
def _double_in_place_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def _double_in_place(x: torch.Tensor) -> torch.Tensor:
    _double_in_place_kernel[(triton.cdiv(x.numel(), 64),)](x, x.numel(), BLOCK=64)
    return x


@tt.op(f"{NS}::writes_and_returns_its_input", mutates_args=("x",), fallback=False)
def writes_and_returns_its_input(x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """vLLM's convention: the written inputs are the results."""
    _double_in_place(x)
    return x, residual


@tt.op(f"{NS}::writes_and_returns_a_view", mutates_args=("x",), fallback=False)
def writes_and_returns_a_view(x: torch.Tensor) -> torch.Tensor:
    return _double_in_place(x).transpose(0, 1)


@tt.op(f"{NS}::one_tensor_twice", fallback=False)
def one_tensor_twice(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = _double_in_place(x.clone())
    return out, out


@tt.op(f"{NS}::overlapping_views_of_one_tensor", fallback=False)
def overlapping_views_of_one_tensor(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = _double_in_place(x.clone())
    return out[:, :3], out[:, 1:]  # columns 1 and 2 in both


def _distinct(*tensors) -> bool:
    return len({t.data_ptr() for t in tensors}) == len(tensors)


def _own_memory(*tensors) -> bool:
    return len({t.untyped_storage().data_ptr() for t in tensors}) == len(tensors)


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_that_are_inputs_views_of_them_or_each_other_are_copies(device):
    """The body returns what it wrote, as in eager; the op, whose schema declares no alias, returns copies (of
    their layouts), on every path: torch.compile's buffers assume fresh outputs."""
    x, r = torch.randn(3, 5, device=device), torch.randn(3, 5, device=device)
    x0, r0 = x.clone(), r.clone()
    out, res = writes_and_returns_its_input(x, r)
    assert _distinct(out, res, x, r)
    torch.testing.assert_close((x, out, res, r), (2 * x0, 2 * x0, r0, r0))
    view = writes_and_returns_a_view(x)
    assert _distinct(view, x) and view.shape == (5, 3) and view.stride() == (1, 5)
    torch.testing.assert_close((view, x), (4 * x0.t(), 4 * x0))
    first, second = one_tensor_twice(x)
    assert _distinct(first, second, x)
    torch.testing.assert_close((first, second), (2 * x, 2 * x))
    left, right = overlapping_views_of_one_tensor(x)  # the second a copy of its view's layout, as the fake's
    assert _own_memory(left, right) and left.stride() == right.stride() == (5, 1)
    torch.testing.assert_close((left, right), (2 * x[:, :3], 2 * x[:, 1:]))
    with FakeTensorMode():
        fake = torch.empty(3, 5, device=device)
        out, res = writes_and_returns_its_input(fake, fake.clone())
        assert out is not fake and out.shape == fake.shape and writes_and_returns_a_view(fake).stride() == (1, 5)
        assert [t.stride() for t in overlapping_views_of_one_tensor(fake)] == [(5, 1), (5, 1)]


@tt.op(f"{NS}::declared_in_place", schema="(Tensor(a!) x, Tensor(b!) residual) -> (Tensor(a!), Tensor(b!))",
       fallback=False)
def declared_in_place(x, residual):
    """As aten's in-place ops declare it: each return is its written argument itself."""
    return _double_in_place(x), _double_in_place(residual)


@pytest.mark.parametrize("device", DEVICES)
def test_a_schema_that_declares_returns_as_written_arguments_returns_them_themselves(device):
    x, r = torch.randn(3, 5, device=device), torch.randn(3, 5, device=device)
    expected = (2 * x, 2 * r)
    out, res = declared_in_place(x, r)
    assert out is x and res is r
    torch.testing.assert_close((x, r), expected)
    with FakeTensorMode():
        fake = torch.empty(3, 5, device=device)
        assert declared_in_place(fake, fake.clone())[0] is fake
    with pytest.raises(TypeError, match="must be a written argument itself"):
        tt.op(f"{NS}::declared_wrongly", lambda x: x, schema="(Tensor(a) x) -> Tensor(a)")
    swapped = tt.op(f"{NS}::declared_swapped_{device}", lambda x, r: (_double_in_place(r), _double_in_place(x)),
                    schema="(Tensor(a!) x, Tensor(b!) r) -> (Tensor(a!), Tensor(b!))")
    with pytest.raises(tt.OpDefinitionError, match="declares return 0 to be argument 'x' itself"):
        swapped(x, r)


@pytest.mark.parametrize("device", DEVICES)
def test_outputs_that_alias_inputs_under_torch_compile(device):
    """Compiled, the written inputs and the outputs are what eager gives (returning the inputs themselves, the
    compiled code reused the output's buffer, which was the input's)."""
    def step(x, r):
        out, res = writes_and_returns_its_input(x, r)
        view = writes_and_returns_a_view(out)
        return out + res, view + 1

    x0, r0 = torch.randn(3, 5, device=device), torch.randn(3, 5, device=device)
    eager_args, compiled_args = (x0.clone(), r0.clone()), (x0.clone(), r0.clone())
    expected = step(*eager_args)
    torch.testing.assert_close(torch.compile(step, fullgraph=True)(*compiled_args), expected)
    torch.testing.assert_close(compiled_args, eager_args)


@triton.jit
def _double_each_kernel(addresses_ptr, n, BLOCK: tl.constexpr):
    """Doubles the n floats at each address of a table (a pointer-array kernel, as grouped GEMMs take)."""
    base = tl.load(addresses_ptr + tl.program_id(0)).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(base + offs, tl.load(base + offs, mask=mask) * 2, mask=mask)


@tt.op(f"{NS}::doubled_through_addresses", fallback=False)
def doubled_through_addresses(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = a.clone(), b.clone()
    parts = (a, b[1:])  # a view's address is its base's plus its offset
    table = torch.tensor([t.data_ptr() for t in parts], dtype=torch.int64, device=a.device)
    _double_each_kernel[(len(parts),)](table, a.numel(), BLOCK=64)
    return a, b


@pytest.mark.parametrize("device", DEVICES)
def test_a_table_of_addresses_of_tensors_the_body_makes_is_read_per_call(device):
    for n in (8, 8, 20):  # the second call runs the first call's plan, on new allocations
        a, b = torch.randn(n, device=device), torch.randn(n + 1, device=device)
        out_a, out_b = doubled_through_addresses(a, b)
        torch.testing.assert_close(out_a, 2 * a)
        torch.testing.assert_close(out_b, torch.cat([b[:1], 2 * b[1:]]))
    plan = doubled_through_addresses.trace(a, b)
    assert [a.name for a in plan.aten_steps].count("torch_tile::tensor_of_ints") == 1 and not plan.fallback


@triton.jit
def _rotate_kernel(x_ptr, freqs_ptr, out_ptr, half, BLOCK: tl.constexpr):
    """Rotates each (re, im) pair of a row by that row's complex frequency (given as its real view)."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < half
    re = tl.load(x_ptr + row * 2 * half + 2 * offs, mask=mask)
    im = tl.load(x_ptr + row * 2 * half + 2 * offs + 1, mask=mask)
    f_re = tl.load(freqs_ptr + row * 2 * half + 2 * offs, mask=mask)
    f_im = tl.load(freqs_ptr + row * 2 * half + 2 * offs + 1, mask=mask)
    tl.store(out_ptr + row * 2 * half + 2 * offs, re * f_re - im * f_im, mask=mask)
    tl.store(out_ptr + row * 2 * half + 2 * offs + 1, re * f_im + im * f_re, mask=mask)


@tt.op(f"{NS}::rotated_by_complex_frequencies", fallback=False)
def rotated_by_complex_frequencies(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """As Llama 4's RoPE wrapper: complex frequencies, reshaped and sliced to the sequence, viewed as real."""
    rows, dim = x.shape
    if freqs_cis.is_complex():
        freqs_cis = torch.view_as_real(freqs_cis.reshape(-1, freqs_cis.shape[-1])[:rows])
    out = torch.empty_like(x)
    _rotate_kernel[(rows,)](x, freqs_cis.contiguous(), out, dim // 2, BLOCK=triton.next_power_of_2(dim // 2))
    return out


@tt.op(f"{NS}::complex_to_a_kernel")
def complex_to_a_kernel(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _scale_kernel[(1,)](x, out, x.numel(), 1.0, BLOCK=128)
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_complex_arguments_are_held_and_viewed_as_real(device):
    x = torch.randn(6, 8, device=device)
    freqs = torch.polar(torch.ones(2, 5, 4), torch.randn(2, 5, 4)).to(device)  # more rows than x: sliced
    reference = torch.view_as_real(torch.view_as_complex(x.reshape(6, 4, 2)) * freqs.reshape(-1, 4)[:6]).flatten(1)
    torch.testing.assert_close(rotated_by_complex_frequencies(x, freqs), reference)
    plan = rotated_by_complex_frequencies.trace(x, freqs)
    assert not plan.fallback and plan.views[-1].dtype == torch.float32 and plan.views[-1].base != 1
    z = torch.randn(4, dtype=torch.complex64, device=device)
    with pytest.raises(tt.CallError, match=r"is a torch.complex64 tensor: tile kernels take no complex tensors; "
                                           r"pass torch.view_as_real"):
        complex_to_a_kernel(z)


def test_the_body_s_own_errors_name_the_op():
    @tt.op(f"{NS}::checks_its_input")
    def checks_its_input(x: torch.Tensor) -> torch.Tensor:
        if x.abs().max().item() > 10:
            raise ValueError("values out of range")
        return _scaled(x, 1.0)

    torch.testing.assert_close(checks_its_input(torch.ones(8)), torch.ones(8))
    with pytest.raises(ValueError, match="values out of range") as info:
        checks_its_input(torch.full((8,), 100.0))
    assert any(f"torch_tile op {NS}::checks_its_input" in note for note in info.value.__notes__)


# -- a library that keeps what a launch returns ---------------------------------------------------------------


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=2)], key=["n"])
@triton.jit
def _tuned_scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


class _KeptLaunches:
    """A library's launch cache, as FlagGems' ``libentry`` keeps one: the first launch of a key through
    ``kernel.run``, what it returns kept, with the constexprs its autotuner chose (``best_config``); later launches
    of the key launch the kept kernel, passing every parameter (Triton up to 3.6) or the runtime ones (later)."""

    def __init__(self, kernel, every_parameter: bool):
        self.kernel, self.every_parameter, self.kept = kernel, every_parameter, {}

    def __call__(self, x, out, n, scale):
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731 - as libraries write grids
        key = (x.dtype, out.dtype)
        if key not in self.kept:
            if isinstance(self.kernel, triton.runtime.Autotuner):
                compiled = self.kernel.run(x, out, n, scale, grid=grid, warmup=False)
                self.kept[key] = (compiled, self.kernel.best_config.kwargs)
            else:  # its constexpr given by position
                self.kept[key] = (self.kernel.run(x, out, n, scale, 64, grid=grid, warmup=False), {"BLOCK": 64})
            return
        compiled, constexprs = self.kept[key]
        args = (x, out, n, scale, *constexprs.values()) if self.every_parameter else (x, out, n, scale)
        compiled[(*grid(constexprs), 1, 1)[:3]](*args)  # a CompiledKernel takes a grid of three


# Triton up to 3.6 passes a compiled kernel every parameter, later versions the non-constexpr ones.
_COMPILED_KERNELS_TAKE_CONSTEXPRS = tuple(int(v) for v in triton.__version__.split(".")[:2]) < (3, 7)
_KEPT_LAUNCHES = {(tuned, every): _KeptLaunches(_tuned_scale_kernel if tuned else _scale_kernel, every)
                  for tuned in (True, False) for every in (True, False)}


def _scaled_through_kept_launches(x: torch.Tensor, tuned: bool, every_parameter: bool) -> torch.Tensor:
    out = torch.empty_like(x)
    _KEPT_LAUNCHES[tuned, every_parameter](x, out, x.numel(), 3.0)
    return out


through_kept_launches = tt.op(f"{NS}::through_kept_launches", _scaled_through_kept_launches, fallback=False)


@pytest.mark.parametrize("tuned", [True, False])
@pytest.mark.parametrize("every_parameter", [True, False])
@pytest.mark.parametrize("device", DEVICES)
def test_a_kernel_a_library_keeps_from_a_launch_launches_again(device, every_parameter, tuned):
    kept = _KEPT_LAUNCHES[tuned, every_parameter]
    kept.kept.clear()
    if device == "cuda":  # kept from a launch outside torch_tile: a compiled kernel, launched again in the body
        kept(*(torch.randn(8, device=device),) * 2, 8, 3.0)
    for n in (100, 100, 300):  # the first call's trace keeps what its launch returned; the next calls use it
        x = torch.randn(n, device=device)
        torch.testing.assert_close(through_kept_launches(x, tuned, every_parameter), 3 * x)
        assert len(through_kept_launches.trace(x, tuned, every_parameter).launches) == 1  # the kept one
    if device == "cuda" and every_parameter != _COMPILED_KERNELS_TAKE_CONSTEXPRS:
        return  # this library's own launches of the compiled kernel are written for another version of Triton
    # The library's own later calls work with what the op's calls left in its cache.
    x, out = torch.randn(50, device=device), torch.empty(50, device=device)
    with _without_torch_tile(device):
        kept(x, out, 50, 3.0)
    torch.testing.assert_close(out, 3 * x)


# A kernel compiled outside torch_tile (for sm_90, which needs no GPU to compile), kept by the program.
_COMPILED_OUTSIDE = triton.compile(
    ASTSource(_scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32", "BLOCK": "constexpr"},
              {"BLOCK": 64}), target=GPUTarget("cuda", 90, 32))


def _through_a_compiled_kernel(x: torch.Tensor, every_parameter: bool) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    args = (x, out, n, 2.0, 64) if every_parameter else (x, out, n, 2.0)
    _COMPILED_OUTSIDE[(triton.cdiv(n, 64), 1, 1)](*args)
    return out


through_a_compiled_kernel = tt.op(f"{NS}::through_a_compiled_kernel", _through_a_compiled_kernel, fallback=False)


@pytest.mark.parametrize("every_parameter", [True, False])
@pytest.mark.parametrize("device", DEVICES)
def test_a_compiled_kernel_launched_in_a_body_is_a_launch_of_its_function(device, every_parameter):
    for n in (100, 300):
        x = torch.randn(n, device=device)
        torch.testing.assert_close(through_a_compiled_kernel(x, every_parameter), 2 * x)
    plan = through_a_compiled_kernel.trace(x, every_parameter)
    assert [launch.kernel_name for launch in plan.launches] == ["_scale_kernel"]


# -- a kernel that calls Triton's helpers ----------------------------------------------------------------------


def _padded_doubling(x_ptr, out_ptr, n, N: tl.constexpr):  # jitted afresh by each test: never hashed before it
    BLOCK: tl.constexpr = triton.next_power_of_2(N)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


@pytest.mark.parametrize("device", DEVICES)
def test_a_kernel_calling_triton_s_helpers_is_recorded_by_the_first_op_to_meet_it(device):
    kernel = triton.jit(_padded_doubling)

    def body(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        wrap_triton(kernel)[(1,)](x, out, n, N=triton.next_power_of_2(n))
        return out

    op = tt.op(f"{NS}::calls_triton_helpers_{device}", body, fallback=False)
    for n in (37, 37, 100):
        x = torch.randn(n, device=device)
        torch.testing.assert_close(op(x), 2 * x)
    # The key Triton gives the kernel outside any trace, and its own launch of it, as before.
    assert kernel.cache_key == triton.jit(_padded_doubling).cache_key
    out = torch.empty_like(x)
    with _without_torch_tile(device):
        kernel[(1,)](x, out, x.numel(), N=128)
    torch.testing.assert_close(out, 2 * x)


# -- a torch.compile'd helper ------------------------------------------------------------------------------------


@torch.compile(backend="eager", dynamic=False)
def _epilogue(y: torch.Tensor) -> torch.Tensor:
    return y * 2 + 1


@tt.op(f"{NS}::compiled_epilogue")
def compiled_epilogue(x: torch.Tensor) -> torch.Tensor:
    return _epilogue(_scaled(x, 3.0))


def test_a_compiled_helper_runs_in_the_plan():
    x = torch.randn(64)
    plan = compiled_epilogue.trace(x)
    assert [launch.kernel_name for launch in plan.launches] == ["_scale_kernel"]
    assert {step.name for step in plan.aten_steps} >= {"aten::mul", "aten::add"}
    torch.testing.assert_close(compiled_epilogue(x), 6 * x + 1)
    torch.testing.assert_close(_epilogue(x), 2 * x + 1)  # and it still compiles outside the op


# -- what else bodies do ----------------------------------------------------------------------------------------


@tt.op(f"{NS}::layouts", fallback=False)
def layouts(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Allocations as libraries write them, with torch's keywords."""
    dense = torch.empty_like(x, memory_format=torch.contiguous_format)
    last = torch.zeros_like(x, memory_format=torch.channels_last)
    like_last = torch.empty(x.shape, device=x.device, dtype=x.dtype, memory_format=torch.channels_last,
                            requires_grad=False, pin_memory=False, layout=torch.strided)
    for out in (dense, like_last):
        n = out.numel()
        _scale_kernel[(triton.cdiv(n, 128),)](x.contiguous(), out, n, 2.0, BLOCK=128)
    return dense, last, like_last


def test_allocation_keywords_give_torch_s_layouts():
    x = torch.randn(2, 3, 4, 5).transpose(2, 3)
    dense, last, like_last = layouts(x)
    reference = torch.empty(x.shape, memory_format=torch.channels_last)
    assert dense.is_contiguous() and dense.shape == x.shape
    assert last.stride() == like_last.stride() == reference.stride()
    assert torch.equal(last, torch.zeros_like(last))
    torch.testing.assert_close(dense, 2 * x.contiguous())
    assert not layouts.trace(x).fallback


@tt.op(f"{NS}::conv_weight_gradient", fallback=False)
def conv_weight_gradient(x: torch.Tensor, weight: torch.Tensor, grad_out: torch.Tensor) -> torch.Tensor:
    """A gradient of one of several inputs, as backwards compute it: convolution_backward with an output mask (its
    masked gradients are undefined tensors), then a kernel on the one it asks for."""
    grad_weight = torch.nn.grad.conv2d_weight(x, weight.shape, grad_out, padding=1)
    out = torch.empty_like(grad_weight)
    n = out.numel()
    _scale_kernel[(triton.cdiv(n, 128),)](grad_weight, out, n, 0.5, BLOCK=128)
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_an_aten_step_keeps_the_results_its_call_returns_among_undefined_ones(device):
    x, weight, grad_out = (torch.randn(*s, device=device) for s in ((2, 3, 6, 6), (4, 3, 3, 3), (2, 4, 6, 6)))
    want = 0.5 * torch.nn.grad.conv2d_weight(x, weight.shape, grad_out, padding=1)
    plan = conv_weight_gradient.trace(x, weight, grad_out)
    assert [s.name for s in plan.aten_steps] == ["aten::convolution_backward"]
    assert plan.aten_steps[0].num_outputs == 1
    torch.testing.assert_close(conv_weight_gradient(x, weight, grad_out), want)
    compiled = torch.compile(conv_weight_gradient, fullgraph=True, dynamic=True)
    torch.testing.assert_close(compiled(x, weight, grad_out), want)


@tt.op(f"{NS}::aligned_copy", fallback=False)
def aligned_copy(x: torch.Tensor) -> torch.Tensor:
    """Alignment checks on every pointer, outputs and views included (block size picked by them)."""
    out = torch.empty_like(x)
    aligned = all(t.data_ptr() % 16 == 0 for t in (x, out, out[4:]))  # out[4:]: 16 bytes past an aligned base
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 128 if aligned else 64),)](x, out, n, 1.0, BLOCK=128 if aligned else 64)
    return out


def test_addresses_of_outputs_and_views_are_alignment_guards():
    x = torch.randn(300)
    plan = aligned_copy.trace(x)
    assert [launch.kernel_name for launch in plan.launches] == ["_scale_kernel"]
    torch.testing.assert_close(aligned_copy(x), x)
    unaligned = torch.randn(301)[1:]  # 4 bytes past an aligned base: the other case, its own plan
    torch.testing.assert_close(aligned_copy(unaligned), unaligned)
    assert any("x.data_ptr()" in guard.text for guard in aligned_copy.trace(unaligned).guards)


@triton.jit
def _strided_read_kernel(x_ptr, x_stride, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets * x_stride, mask=mask).to(out_ptr.dtype.element_ty),
             mask=mask)


class _StridedBuffer:
    """A library's pointer object, as FlagGems' ``StridedBuffer``: a tensor's memory from an element of its own
    (any stride, negative ones too) and of its own dtype, which Triton's launcher takes as a pointer through
    ``data_ptr()`` and ``dtype``."""

    def __init__(self, base: torch.Tensor, offset: int, dtype=None):
        self.dtype = dtype or base.dtype
        self._data_ptr = base.data_ptr() + offset * self.dtype.itemsize

    def data_ptr(self) -> int:
        return self._data_ptr


@tt.op(f"{NS}::reversed_through_a_buffer", fallback=False)
def reversed_through_a_buffer(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    n = x.numel()
    last = _StridedBuffer(x, (n - 1) * x.stride(0))  # x's last element, read backwards
    _strided_read_kernel[(triton.cdiv(n, 64),)](last, -x.stride(0), out, n, BLOCK=64)
    return out


@tt.op(f"{NS}::fp8_bits_as_floats", fallback=False)
def fp8_bits_as_floats(bits: torch.Tensor) -> torch.Tensor:
    out = torch.empty(bits.shape, dtype=torch.float32, device=bits.device)
    _strided_read_kernel[(triton.cdiv(bits.numel(), 64),)](triton.reinterpret(bits, tl.float8e5), 1, out, bits.numel(),
                                                     BLOCK=64)
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_objects_with_data_ptr_and_dtype_are_pointers(device):
    x = torch.randn(300, device=device)
    plan = reversed_through_a_buffer.trace(x)
    assert not plan.fallback and [launch.kernel_name for launch in plan.launches] == ["_strided_read_kernel"]
    for x in (x, torch.randn(7, device=device), torch.randn(601, device=device)[1::2],
              torch.arange(40, dtype=torch.int32, device=device)):
        torch.testing.assert_close(reversed_through_a_buffer(x), x.flip(0).float())
    bits = torch.randint(0, 256, (100,), dtype=torch.uint8, device=device)
    bits[~bits.view(torch.float8_e5m2).float().isfinite()] = 0  # the interpreter converts no inf or nan
    for bits in (bits, bits[3:]):
        assert not fp8_bits_as_floats.trace(bits).fallback
        torch.testing.assert_close(fp8_bits_as_floats(bits), bits.view(torch.float8_e5m2).float())


class _DevicePointer(_StridedBuffer):
    """A pointer object that says where its memory is (FlagGems' ``StridedBuffer`` has its base's ``device``)."""

    def __init__(self, base: torch.Tensor, device: str):
        super().__init__(base, 0)
        self.device = torch.device(device)


@tt.op(f"{NS}::read_through_a_device_pointer", fallback=False)
def read_through_a_device_pointer(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    _strided_read_kernel[(1,)](_DevicePointer(x, "cuda"), 1, out, x.numel(), BLOCK=64)
    return out


def test_the_cpu_path_reads_no_pointer_object_into_another_device_s_memory():
    with pytest.raises(tt.KernelError, match="_strided_read_kernel"):
        read_through_a_device_pointer(torch.randn(8))


@tt.op(f"{NS}::sizes_as_numbers", fallback=False)
def sizes_as_numbers(x: torch.Tensor, low: int) -> torch.Tensor:
    """torch functions given sizes and int arguments where numbers go."""
    rows, cols = x.shape
    y = torch.clamp_min(x, low) + torch.arange(cols, dtype=x.dtype, device=x.device) + torch.full(
        (rows, cols), low, dtype=x.dtype, device=x.device) + torch.ones(rows, cols, dtype=x.dtype, device=x.device)
    return _scaled(y, 1.0)


def test_sizes_where_torch_wants_numbers():
    x = torch.randn(4, 6)
    expected = torch.clamp_min(x, -1) + torch.arange(6.0) - 1 + 1
    torch.testing.assert_close(sizes_as_numbers(x, -1), expected)
    assert {step.name for step in sizes_as_numbers.trace(x, -1).aten_steps} >= {"aten::clamp_min", "aten::arange"}


@tt.op(f"{NS}::dims_last", fallback=False)
def dims_last(x: torch.Tensor, dim: int, scale: float) -> torch.Tensor:
    """Type tests libraries make on numbers before using them (FlagGems' dim_compress)."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    order = [i for i in range(x.ndim) if i not in dims] + dims
    moved = x.permute(order).contiguous()
    assert isinstance(moved.numel(), int) and not isinstance(dim, bool)
    return _scaled(moved, scale)


def test_sizes_and_arguments_are_ints_and_floats_to_isinstance():
    x = torch.randn(4, 6, 5)
    for dim in (0, 1, 2):
        torch.testing.assert_close(dims_last(x, dim, 2.0), 2 * x.movedim(dim, -1).contiguous())
    assert any("dim == 1" in guard.text for guard in dims_last.trace(x, 1, 2.0).guards)


@tt.op(f"{NS}::padded_to_blocks", fallback=False)
def padded_to_blocks(x: torch.Tensor, other: torch.Tensor, block: int) -> torch.Tensor:
    """Host functions of metadata (a promoted dtype) and a padding computed from sizes (bitsandbytes pads its
    input to whole quantization blocks so)."""
    dtype = torch.promote_types(x.dtype, other.dtype)
    flat = x.reshape(-1).to(dtype)
    if flat.numel() % block:
        flat = torch.nn.functional.pad(flat, (0, block - flat.numel() % block), value=0.0)
    return _scaled(flat, 2.0)


def test_metadata_values_and_paddings_from_sizes_are_plan_steps():
    other = torch.randn(3)
    for shape in ((6, 50), (7, 50), (4, 64)):  # 300 and 350 padded to 384, 256 not padded
        x = torch.randn(shape)
        expected = 2 * torch.nn.functional.pad(x.reshape(-1), (0, -x.numel() % 128))
        torch.testing.assert_close(padded_to_blocks(x, other, 128), expected)
    plan = padded_to_blocks.trace(torch.randn(6, 50), other, 128)
    assert {step.name for step in plan.aten_steps} & {"aten::pad", "aten::constant_pad_nd"}
    assert len(padded_to_blocks.trace(torch.randn(7, 50), other, 128).guards) == len(plan.guards)  # one plan


class _Slotted:
    __slots__ = ("kept",)


_KEPT = _Slotted()


@tt.op(f"{NS}::keeps_a_size_where_it_cannot_be_replaced")
def keeps_a_size(x: torch.Tensor) -> torch.Tensor:
    _KEPT.kept = x.numel()  # an object with __slots__: nothing torch_tile can edit
    return _scaled(x, 1.0)


def test_a_stand_in_kept_where_it_cannot_be_replaced_refuses_its_next_use():
    keeps_a_size.trace(torch.randn(8))  # (a call would then run the body on CPU, which keeps a plain int)
    with pytest.raises(tt.TraceError, match=rf"{NS}::keeps_a_size_where_it_cannot_be_replaced: a stand-in of the "
                                            r"op's trace .* was kept by the body's code past the trace"):
        _KEPT.kept + 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_fallback_op_under_torch_compile(backend):
    """torch.compile around an op no plan holds: the op breaks the graph (its fake cannot read data), and its
    body then runs in Python, never traced by Dynamo (torch_tile's own code, like torch.library's kernels)."""
    op = scaled_by_max["cpu"]
    compiled = torch.compile(lambda t: op(t) + 1, backend=backend)
    x = torch.randn(64)
    torch.testing.assert_close(compiled(x), x * x.abs().max() + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_a_fallback_op_in_a_compiled_graph(device):
    """An op whose plan is a fallback (a body drawing host random numbers) inside a graph: AOTAutograd runs it
    on real tensors under its proxy mode, and the body runs as the caller would run it."""
    torch._dynamo.reset()
    x = torch.rand(300, device=device) + 0.5
    y = torch.compile(lambda t: seeded_dropout(t, 0.5) * 3, fullgraph=True, backend="aot_eager")(x)
    assert set(torch.unique(y / x / 3).round(decimals=4).tolist()) == {0.0, 2.0}


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_breaks_the_graph_before_a_call_whose_backward_runs_in_python(device):
    def step(t):
        y = seeded_dropout(t * 1, 0.5)
        y.backward(torch.ones_like(y))
        return y

    torch._dynamo.reset()
    x = (torch.rand(300, device=device) + 0.5).requires_grad_()
    y = torch.compile(step, backend="aot_eager")(x)  # the op runs between two graphs
    assert torch.equal(x.grad != 0, y.detach() != 0) and (y != 0).any() and (y == 0).any()
    torch._dynamo.reset()
    with pytest.raises(Exception, match=f"{NS}::seeded_dropout: calls of it that need a gradient run its body "
                                        "and its Functions' backwards in Python"):
        torch.compile(step, backend="aot_eager", fullgraph=True)(x)


# -- random numbers drawn on the host -------------------------------------------------------------------------


@triton.jit
def _dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    keep = tl.rand(seed, offsets) > p
    tl.store(out_ptr + offsets, tl.where(keep, tl.load(x_ptr + offsets, mask=mask) / (1 - p), 0.0), mask=mask)


def _dropped(x: torch.Tensor, p: float, seed: int) -> torch.Tensor:
    out = torch.empty_like(x)
    _dropout_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), p, seed, BLOCK=128)
    return out


class _SeededDropout(torch.autograd.Function):
    """A library's dropout (attorch's): its seed drawn from Python's random module in the forward, kept on ctx
    so that the backward drops the same elements."""

    @staticmethod
    def forward(ctx, x, p):
        ctx.p, ctx.seed = p, random.randint(0, 65535)
        return _dropped(x, p, ctx.seed)

    @staticmethod
    def backward(ctx, grad):
        return _dropped(grad.contiguous(), ctx.p, ctx.seed), None


@tt.op(f"{NS}::seeded_dropout")
def seeded_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    return _SeededDropout.apply(x, p)


@tt.op(f"{NS}::numpy_seeded_dropout")
def numpy_seeded_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    return _dropped(x, p, int(np.random.randint(0, 65535)))


@pytest.mark.parametrize("device", DEVICES)
def test_random_numbers_drawn_on_the_host_are_drawn_per_call(device):
    masks = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback's warning, once per op
        for _ in range(3):
            x = (torch.rand(500, device=device) + 0.5).requires_grad_()
            y = seeded_dropout(x, 0.5)
            y.backward(torch.ones_like(y))
            assert torch.equal(x.grad != 0, y.detach() != 0)  # the backward's mask is this forward's
            masks.append(y.detach() != 0)
            masks.append(numpy_seeded_dropout(x.detach(), 0.5) != 0)
    assert len({tuple(m.tolist()) for m in masks}) == len(masks)  # a fresh draw per call
    for op, generator in ((seeded_dropout, "Python's random module"), (numpy_seeded_dropout, "NumPy's global")):
        with pytest.raises(tt.TraceError, match=f"draws random numbers on the host \\({generator}"):
            op.trace(torch.rand(500), 0.5)


# -- tensors made from host values ----------------------------------------------------------------------------


@triton.jit
def _gather_kernel(x_ptr, index_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    index = tl.load(index_ptr + offsets, mask=mask, other=0)
    tl.store(out_ptr + offsets, tl.load(x_ptr + index, mask=mask), mask=mask)


@triton.jit
def _iota_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, offsets.to(out_ptr.dtype.element_ty), mask=offsets < n)


@tt.op(f"{NS}::packed_positions", fallback=False)
def packed_positions(x: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
    """An output sized by a 0-d tensor of the data (a varlen library's total length, ``cu_seqlens[-1]``)."""
    out = torch.empty(cu_seqlens[-1], dtype=x.dtype, device=x.device)
    _iota_kernel[(triton.cdiv(out.numel(), 64),)](out, out.numel(), BLOCK=64)
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_a_0d_tensor_as_an_allocation_size_is_a_read_of_the_data(device):
    x = torch.randn(4, device=device)
    for ends in ([0, 3, 7], [0, 2, 5, 90]):  # the size is read from the data per call
        cu_seqlens = torch.tensor(ends, device=device)
        torch.testing.assert_close(packed_positions(x, cu_seqlens), torch.arange(ends[-1], device=device,
                                                                                 dtype=x.dtype))
    plan = packed_positions.trace(x.cpu(), torch.tensor([0, 3, 7]))
    assert len(plan.reads) == 1 and not plan.fallback


@torch.library.custom_op(f"{NS}_lib::positives", mutates_args=())
def _positives(x: torch.Tensor) -> torch.Tensor:
    """A library's custom op whose result the data sizes: its fake implementation says so with a dynamic size."""
    return x[x > 0] * 2


@_positives.register_fake
def _(x):
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())


@tt.op(f"{NS}::scaled_positives", fallback=False)
def scaled_positives(x: torch.Tensor) -> torch.Tensor:
    return _scaled(_positives(x), 0.5)


@pytest.mark.parametrize("device", DEVICES)
def test_a_custom_op_whose_data_sizes_its_result_is_a_plan_step(device):
    for n in (10, 37):
        x = torch.randn(n, device=device)
        torch.testing.assert_close(scaled_positives(x), x[x > 0])
    plan = scaled_positives.trace(torch.randn(10))
    assert [s.name for s in plan.aten_steps] == [f"{NS}_lib::positives"] and not plan.fallback


@triton.jit
def _row_scale_kernel(x_ptr, out_ptr, sums_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x * scale, mask=cols < n_cols)
    if sums_ptr is not None:
        tl.store(sums_ptr + row, tl.sum(x, axis=0))


@torch.library.triton_op(f"{NS}_lib::row_scaled", mutates_args=())
def _row_scaled(x: torch.Tensor) -> torch.Tensor:
    """flash-attn's layer norm's block: torch.library runs this body on fake tensors for the result's shape, where
    ``n_cols`` is a SymInt and ``triton.next_power_of_2`` a chain of ``|`` and shifts on it."""
    out = torch.empty_like(x)
    block = min(65536 // x.element_size(), triton.next_power_of_2(x.shape[1]))
    if x.shape[1] > block:
        raise RuntimeError("rows are too wide")
    wrap_triton(_row_scale_kernel)[(x.shape[0],)](x, out, None, x.shape[1], 2.0, BLOCK=block)
    return out


@torch.library.custom_op(f"{NS}_lib::row_scale_into", mutates_args=("out", "sums"))
def _row_scale_into(x: torch.Tensor, out: torch.Tensor, sums: Optional[torch.Tensor], scale: float) -> torch.Tensor:
    """A library's op that fills the ``out`` it is given (and an optional ``sums``) and returns a new tensor."""
    with set_wrap_triton_enabled(False):
        _row_scale_kernel[(x.shape[0],)](x, out, sums, x.shape[1], scale, BLOCK=triton.next_power_of_2(x.shape[1]))
    return x.new_full((x.shape[0],), scale)


@_row_scale_into.register_fake
def _(x, out, sums, scale):
    return x.new_empty(x.shape[0])


@tt.op(f"{NS}::calls_a_triton_op", fallback=False)
def calls_a_triton_op(x: torch.Tensor) -> torch.Tensor:
    return _row_scaled(x)


@tt.op(f"{NS}::calls_a_writing_custom_op", fallback=False)
def calls_a_writing_custom_op(x: torch.Tensor, with_sums: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    out = torch.empty_like(x)
    sums = torch.zeros(x.shape[0], device=x.device) if with_sums else None
    scales = _row_scale_into(x, out, sums, 3.0)
    return out, scales, x.sum(1) if sums is None else sums


@pytest.mark.parametrize("device", DEVICES)
def test_a_registered_op_in_a_body_whose_fake_takes_next_power_of_2_of_a_size(device):
    for rows, cols in ((4, 10), (3, 16), (5, 17), (2, 100)):  # one plan per block size, none a fallback
        x = torch.randn(rows, cols, device=device)
        torch.testing.assert_close(calls_a_triton_op(x), 2 * x, rtol=0, atol=0)
    plan = calls_a_triton_op.trace(torch.randn(4, 10))
    assert [s.name for s in plan.aten_steps] == [f"{NS}_lib::row_scaled"] and not plan.fallback
    # Triton's chain of `|` and shifts is the plan's one opcode again
    guards = {g.text: g.code for g in plan.guards}
    assert "next_power_of_2(x.size(1)) < 16384" in guards and all(len(code) < 20 for code in guards.values())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("with_sums", [True, False])
def test_a_registered_op_that_writes_its_arguments_and_returns_a_new_tensor(device, with_sums):
    x = torch.randn(6, 20, device=device)
    out, scales, sums = calls_a_writing_custom_op(x, with_sums)
    torch.testing.assert_close(out, 3 * x, rtol=0, atol=0)
    torch.testing.assert_close(scales, torch.full((6,), 3.0, device=device), rtol=0, atol=0)
    torch.testing.assert_close(sums, x.sum(1))
    plan = calls_a_writing_custom_op.trace(x.cpu(), with_sums)
    assert [s.name for s in plan.aten_steps].count(f"{NS}_lib::row_scale_into") == 1 and not plan.fallback


@tt.op(f"{NS}::grouped_by_divmod", fallback=False)
def grouped_by_divmod(x: torch.Tensor) -> torch.Tensor:
    """Sizes split with divmod (unsloth's RoPE groups its heads so)."""
    groups, rest = divmod(x.shape[0], 4)
    per_row, _ = divmod(1000, x.shape[1])
    return _scaled(x, float(groups * 100 + rest * 10 + per_row))


@pytest.mark.parametrize("device", DEVICES)
def test_divmod_of_sizes_stays_symbolic(device):
    for rows, cols in ((9, 7), (14, 30), (4, 1000)):
        x = torch.randn(rows, cols, device=device)
        scale = (rows // 4) * 100 + (rows % 4) * 10 + 1000 // cols
        torch.testing.assert_close(grouped_by_divmod(x), x * scale)
    assert not grouped_by_divmod.trace(torch.randn(9, 7)).fallback


def _ends_then_start(x: torch.Tensor) -> torch.Tensor:
    """A table of sizes for the kernel, made on the device as libraries make offset tables."""
    index = torch.tensor([x.numel() - 1, x.numel() - 2, 0], dtype=torch.int32, device=x.device)
    out = torch.empty(3, device=x.device, dtype=x.dtype)
    _gather_kernel[(1,)](x, index, out, 3, BLOCK=4)
    return out


def _rows_of_a_batch(x: torch.Tensor) -> torch.Tensor:
    """Host arithmetic through a CPU tensor (Liger-Kernel's multi-token attention counts rows so)."""
    rows = int(torch.prod(torch.tensor(x.shape[:-1])))
    return _scaled(x.reshape(rows, x.shape[-1]), 2.0)


def _with_a_placeholder(x: torch.Tensor) -> torch.Tensor:
    """An empty placeholder for an unused kernel argument (as conch's GEMMs pass their absent zero points)."""
    zeros = torch.tensor([[]], dtype=torch.int32, device=x.device)
    return _scaled(x, float(zeros.numel() + 3))


table_on_device = tt.op(f"{NS}::table_on_device", _ends_then_start, fallback=False)
rows_of_a_batch = tt.op(f"{NS}::rows_of_a_batch", _rows_of_a_batch, fallback=False)
with_a_placeholder = tt.op(f"{NS}::with_a_placeholder", _with_a_placeholder, fallback=False)


@pytest.mark.parametrize("device", DEVICES)
def test_tensors_of_host_values_are_plan_steps(device):
    for n in (10, 37):  # one plan: the table's values are expressions of the size, not guarded
        x = torch.randn(n, device=device)
        torch.testing.assert_close(table_on_device(x), x[[n - 1, n - 2, 0]], rtol=0, atol=0)
    plan = table_on_device.trace(torch.randn(10))
    assert [step.name for step in plan.aten_steps] == ["torch_tile::tensor_of_ints"]
    assert not any("size" in guard.text for guard in plan.guards)
    x = torch.randn(5, device=device)
    torch.testing.assert_close(with_a_placeholder(x), 3 * x)
    for shape in ((2, 3, 4), (5, 4), (2, 2, 2, 4)):  # the product is guarded: a plan per batch shape
        x = torch.randn(*shape, device=device)
        torch.testing.assert_close(rows_of_a_batch(x), 2 * x.reshape(-1, 4))
    assert any("x.size(0) == 2" in guard.text for guard in rows_of_a_batch.trace(torch.randn(2, 3, 4)).guards)


def test_a_tensor_of_host_floats_on_the_device_falls_back_with_its_reason():
    def body(x: torch.Tensor) -> torch.Tensor:
        return x * torch.tensor([0.5], device=x.device)

    op = tt.op(f"{NS}::host_floats", body)
    x = torch.randn(4)
    with pytest.warns(RuntimeWarning, match=r"a tensor of torch.float32 host values on cpu: a launch plan holds "
                                            r"integer values and single floats only"):
        torch.testing.assert_close(op(x), x * 0.5)


def test_one_host_float_on_the_device_is_a_plan_step():
    def body(x: torch.Tensor, scale: float) -> torch.Tensor:
        return x * torch.tensor(scale, device=x.device) + torch.tensor(0.25, device=x.device)

    op = tt.op(f"{NS}::host_float", body, fallback=False)
    x = torch.randn(4)
    torch.testing.assert_close(op(x, 3.0), x * 3.0 + 0.25)
    steps = op.trace(x, 3.0).aten_steps
    assert [s.name for s in steps] == ["aten::scalar_tensor", "aten::mul", "aten::scalar_tensor", "aten::add"]
    assert list(steps[0].args[0].slots) == [1] and steps[2].args[0].number == 0.25  # the argument, read per call


def test_numbers_assigned_to_slices_are_plan_steps():
    """`y[:, -1] = 0` (a backward clearing a column): torch makes the number a tensor, a plan step of its own."""
    def body(x: torch.Tensor, n: int) -> torch.Tensor:
        y = x.clone()
        y[:, -1] = 0
        y[0] = n
        return y

    op = tt.op(f"{NS}::slice_assigned", body, fallback=False)
    x = torch.randn(3, 4)
    for n in (2, 7):
        want = x.clone()
        want[:, -1] = 0
        want[0] = n
        torch.testing.assert_close(op(x, n), want, rtol=0, atol=0)
    steps = op.trace(x, 2).aten_steps
    assert [s.name for s in steps] == ["aten::clone", "aten::scalar_tensor", "aten::fill_", "aten::scalar_tensor",
                                       "aten::fill_"]


# -- values read from the data ----------------------------------------------------------------------------------


@triton.jit
def _divide_kernel(x_ptr, out_ptr, n, count, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) / count, mask=mask)


@triton.jit
def _gather_rows_kernel(x_ptr, rows_ptr, out_ptr, n_rows, width, HAS_ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    source = tl.load(rows_ptr + row) if HAS_ROWS else row
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    tl.store(out_ptr + row * width + cols, tl.load(x_ptr + source * width + cols, mask=mask) * 2, mask=mask)


def _divided_by_valid_count(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    # A loss's normalizer as libraries compute it: a count read on the host, and an assert on the data.
    mask = target != -100
    n = mask.sum().item()
    assert (target * mask).max() < x.numel(), "target out of range"
    out = torch.empty_like(x)
    _divide_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), n, BLOCK=128)
    return out


def _valid_rows_doubled(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    # The rows a mask keeps (a size the data decides), and a branch on it, as cut-cross-entropy's valids.
    rows = (target != -100).nonzero().to(torch.int32).squeeze(1)
    if rows.numel() == target.numel():
        rows = None
    n = x.shape[0] if rows is None else rows.numel()
    out = x.new_empty((n, x.shape[1]))
    _gather_rows_kernel[(n,)](x, rows, out, n, x.shape[1], HAS_ROWS=rows is not None,
                              BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


divided_by_valid_count = {device: tt.op(f"{NS}::divided_by_valid_count_{device}", _divided_by_valid_count)
                          for device in DEVICES}
valid_rows_doubled = {device: tt.op(f"{NS}::valid_rows_doubled_{device}", _valid_rows_doubled) for device in DEVICES}


def _targets(n: int, device: str, ignored=slice(None, None, 3)) -> torch.Tensor:
    target = torch.randint(0, 8, (n,), device=device)
    target[ignored] = -100
    return target


def _steps(plan) -> list[str]:
    return [s.kind.name for s in plan.order]


@pytest.mark.parametrize("device", DEVICES)
def test_a_count_read_from_the_data_is_a_read_step(device):
    op = divided_by_valid_count[device]
    x, target = torch.randn(64, device=device), _targets(10, device)
    plan = op.trace(x, target)
    assert not plan.fallback
    assert _steps(plan).count("READ") == 2 and _steps(plan).count("CHECK") == 1
    assert _steps(plan).index("CHECK") < _steps(plan).index("LAUNCH")
    count = plan.launches[0].bindings[3]  # the kernel's `count`: the first value read
    assert list(count.expr.code) == [int(Op.READ), 0]
    for t in (target, _targets(10, device, ignored=slice(0, 7))):  # 7 and 3 valid targets: one plan
        torch.testing.assert_close(op(x, t), x / (t != -100).sum())
    if device == "cuda":
        assert op.plan_count == 1 and not op.fallback_calls
    bad = target.clone()
    bad[1] = 1000
    with pytest.raises(AssertionError, match="target out of range"):  # the body's own assert, as it raises it
        op(x, bad)


@pytest.mark.parametrize("device", DEVICES)
def test_a_size_the_data_decides_and_a_branch_on_it(device):
    op = valid_rows_doubled[device]
    x, target = torch.randn(12, 5, device=device), _targets(12, device)
    plan = op.trace(x, target)
    assert not plan.fallback and "CHECK" in _steps(plan)
    nonzero = next(i for i, s in enumerate(plan.aten_steps) if s.name == "aten::nonzero")
    assert _steps(plan).index("ATEN") <= nonzero
    for t in (target, _targets(12, device, ignored=slice(0, 9))):  # 8 and 3 rows kept: the same plan
        torch.testing.assert_close(op(x, t), x[t != -100] * 2)
    if device == "cuda":
        assert op.plan_count == 1 and not op.fallback_calls
    # Every target valid: the branch goes the other way, so the call leaves the plan and runs the body.
    every = torch.randint(0, 8, (12,), device=device)
    torch.testing.assert_close(op(x, every), x * 2)
    if device == "cuda":
        assert sum(op.fallback_calls.values()) == 1


def _shifted_valid_positions(target: torch.Tensor) -> torch.Tensor:
    # cut-cross-entropy's shifted valids: the flat positions of the targets past the first, from nonzero's rows.
    shifted = target[..., 1:]
    valids = (shifted != -100).nonzero().to(torch.int32)
    for i in range(shifted.ndim - 1):
        valids[:, i] *= shifted.stride(i)
    return valids.sum(1)


def _run_steps_on_cpu(plan, args: tuple) -> "list | None":
    """The plan's views, ATen steps and checks run on CPU tensors as the native executor runs them (a view: its
    recorded sizes and strides over its base's memory); its outputs, or None where a check does not hold (the
    call leaves the plan and runs the body)."""
    from torch_tile import _fake
    from torch_tile.trace.expr import evaluate

    scalars, tensors = _fake.scalars_of(args), list(args)
    for step in plan.order:
        kind = step.kind.name
        if kind == "VIEW":
            view = plan.views[step.index]
            base = tensors[view.base]
            base = base if base.dtype == view.dtype else _fake.typed_as(base, view.dtype)
            sizes, strides = ([evaluate(e.code, tensors, scalars) for e in dims] for dims in (view.sizes, view.strides))
            offset = evaluate(view.offset.code, tensors, scalars)
            tensors.append(base.as_strided(sizes, strides, base.storage_offset() + offset))
        elif kind == "ATEN":
            aten = plan.aten_steps[step.index]
            overload = _fake._aten_overload(aten)
            values = [_fake._aten_value(a, tensors, args, scalars, torch.device("cpu")) for a in aten.args]
            keywords = {a.name: v for a, v in zip(overload._schema.arguments, values) if a.kwarg_only}
            result = overload(*values[:len(values) - len(keywords)], **keywords)
            tensors.extend((result if isinstance(result, (tuple, list)) else (result,))[:aten.num_outputs])
        elif kind == "CHECK":
            if not evaluate(plan.checks[step.index].condition.code, tensors, scalars):
                return None
        else:
            raise AssertionError(f"a {kind} step: not expected in this plan")
    return [tensors[slot] for slot in plan.outputs]


def test_a_result_the_data_shapes_keeps_the_layout_its_operator_makes():
    """nonzero's rows are column-major (CUDA's and the CPU's): a view of one of its columns, written in place,
    must address that layout in every call the plan serves, and a call whose result is laid out otherwise
    leaves the plan (a Check step right after the operator)."""
    op = tt.op(f"{NS}::shifted_valid_positions", _shifted_valid_positions)
    target = _targets(12, "cpu").view(2, 6)
    plan = op.trace(target)
    for t in (target, _targets(12, "cpu", ignored=slice(0, 7)).view(2, 6), torch.arange(12).view(2, 6)):
        (got,) = _run_steps_on_cpu(plan, (t,))  # every call with more than one row: the plan serves it
        assert torch.equal(got, _shifted_valid_positions(t))
    nonzero = _steps(plan).index("ATEN", _steps(plan).index("ATEN") + 1)  # the second ATen step: nonzero
    assert _steps(plan)[nonzero + 1] == "CHECK" and "laid out as traced" in plan.checks[0].condition.text
    # Traced with one row, no stride says which dimension is inner: torch's layout for nonzero decides.
    one_valid = torch.full((2, 6), -100)
    one_valid[1, 3] = 5
    plan = op.trace(one_valid)
    assert "nonzero3.stride(0) == 1," in plan.checks[0].condition.text
    assert torch.equal(_run_steps_on_cpu(plan, (one_valid,))[0], _shifted_valid_positions(one_valid))


def test_plans_that_read_data_serialize_with_their_reads_and_checks():
    op = divided_by_valid_count["cpu"]
    plan = op.trace(torch.randn(64), _targets(10, "cpu"))
    (loaded,) = tt._C.plans_from_bytes(op.export_plans([plan]))["plans"]
    assert [(r.slot, r.count, r.site) for r in loaded.reads] == [(r.slot, r.count, r.site) for r in plan.reads]
    assert [list(c.condition.code) for c in loaded.checks] == [list(c.condition.code) for c in plan.checks]
    assert _steps(loaded) == _steps(plan)


def test_a_float_read_from_the_data_falls_back_with_its_reason():
    with pytest.raises(tt.TraceError, match=r"`aten.(item|_local_scalar_dense).default` reads a torch.float32 "
                                            r"value from the tensors' data; a launch plan reads integers and bools"):
        scaled_by_max_strict.trace(torch.randn(8))


@triton.jit
def _add_one_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


@tt.op(f"{NS}::decides_after_writing", mutates_args=("x",))
def decides_after_writing(x: torch.Tensor) -> torch.Tensor:
    _add_one_kernel[(triton.cdiv(x.numel(), 128),)](x, x.numel(), BLOCK=128)
    return x.clone() if (x > 0).sum().item() > 2 else x.new_zeros(x.shape)


def test_no_data_check_follows_a_write_of_an_argument():
    """A call that leaves the plan runs the body on the arguments as they came: a check after the body wrote one
    cannot be a plan step, so such calls run the body."""
    with pytest.raises(tt.TraceError, match=r"the launch at .* writes an argument of the op before the body decides"):
        decides_after_writing.trace(torch.ones(8))
    x = torch.ones(8)
    with pytest.warns(RuntimeWarning, match="writes an argument of the op before the body decides"):
        torch.testing.assert_close(decides_after_writing(x), torch.full((8,), 2.0))
    torch.testing.assert_close(x, torch.full((8,), 2.0))


_CAPTURE_A_READ = """
import sys, torch
sys.path[:0] = {paths!r}
import test_idioms as T
op, x, target = T.divided_by_valid_count["cuda"], torch.randn(64, device="cuda"), T._targets(10, "cuda")
op(x, target)  # traced outside the capture
with torch.cuda.stream(torch.cuda.Stream()):
    try:
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            {call}
    except RuntimeError as e:
        print("raised:", str(e).splitlines()[0])
torch.cuda.synchronize()
torch.testing.assert_close(op(x, target), x / (target != -100).sum())
print("after: right")
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA-graph capture needs a GPU")
def test_capturing_a_read_of_the_data_raises_torch_s_error_and_leaves_nothing_sticky():
    """As `.item()` under capture in eager: the same error, and the op right after. In a process of its own: a
    capture that fails leaves torch's CUDA generator registered with the dead graph (eager too), which would fail
    later tests' torch.randn."""
    def run(call: str) -> str:
        script = _CAPTURE_A_READ.format(paths=sys.path, call=call)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    eager, in_the_op = run("(target != -100).sum().item()"), run("op(x, target)")
    assert "raised:" in eager and "captur" in in_the_op and "after: right" in in_the_op
    assert eager.splitlines()[0] == in_the_op.splitlines()[0]


def _copies_counted_prefixes(x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    # Per-row counts read with .tolist(), as MoE wrappers read tokens per expert, passed to the kernel as ints.
    out = torch.zeros_like(x)
    for row, n in enumerate(counts.tolist()):
        _scale_kernel[(triton.cdiv(x.shape[1], 128),)](x[row], out[row], n, 1.0, BLOCK=128)
    return out


copies_counted_prefixes = {device: tt.op(f"{NS}::copies_counted_prefixes_{device}", _copies_counted_prefixes)
                           for device in DEVICES}


@pytest.mark.parametrize("device", DEVICES)
def test_a_list_read_from_the_data_is_one_read_step(device):
    op = copies_counted_prefixes[device]
    x = torch.randn(3, 40, device=device)
    counts = torch.tensor([5, 40, 0], device=device)
    plan = op.trace(x, counts)
    assert _steps(plan).count("READ") == 1 and plan.reads[0].count == 3 and not plan.checks
    assert [list(launch.bindings[2].expr.code) for launch in plan.launches] == [[int(Op.READ), k] for k in range(3)]

    def expected(c):
        out = torch.zeros_like(x)
        for row, n in enumerate(c.tolist()):
            out[row, :n] = x[row, :n]
        return out

    for c in (counts, torch.tensor([40, 1, 17], device=device)):  # other counts: the same plan
        torch.testing.assert_close(op(x, c), expected(c))
    if device == "cuda":
        assert op.plan_count == 1 and not op.fallback_calls


def _split_by_counts(x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    # Rows split by counts read from the data (tokens per expert), each slice its own launch.
    out = torch.zeros_like(x)
    start = 0
    for n in counts.tolist():
        _scale_kernel[(triton.cdiv(x.numel(), 128),)](x[start:start + n], out[start:start + n], n, 3.0, BLOCK=128)
        start += n
    return out


split_by_counts = {device: tt.op(f"{NS}::split_by_counts_{device}", _split_by_counts) for device in DEVICES}


@pytest.mark.parametrize("device", DEVICES)
def test_slices_bounded_by_values_read_from_the_data_stay_symbolic(device):
    op = split_by_counts[device]
    x = torch.randn(20, device=device)
    plan = op.trace(x, torch.tensor([3, 5, 2], device=device))
    # The slices' offsets and sizes are expressions of the values read; the checks only keep them in bounds.
    assert [v.offset.text for v in plan.views][::2] == ["0", "counts.tolist()[0]",
                                                        "counts.tolist()[0] + counts.tolist()[1]"]
    assert all("==" not in c.condition.text for c in plan.checks)
    for counts in ([3, 5, 2], [0, 20, 0], [7, 1, 12]):  # the same plan for each
        c = torch.tensor(counts, device=device)
        expected = torch.cat([3 * x[:sum(counts)], torch.zeros(20 - sum(counts), device=device)])
        torch.testing.assert_close(op(x, c), expected)
    if device == "cuda":
        assert op.plan_count == 1 and not op.fallback_calls


@pytest.mark.parametrize("device", DEVICES)
def test_a_first_call_whose_body_raises_leaves_no_plan_behind(device):
    """The body's own error while its data values are learned (an assert on the first call's data) is that call's
    error; the next call traces as if it were the first."""
    op = tt.op(f"{NS}::asserts_first_{device}", _divided_by_valid_count)
    x, target = torch.randn(64, device=device), _targets(10, device)
    bad = target.clone()
    bad[1] = 1000
    with pytest.raises(AssertionError, match="target out of range"):
        op(x, bad)
    assert op.plan_count == 0 and not op.fallback_calls
    torch.testing.assert_close(op(x, target), x / (target != -100).sum())
    assert not op.trace(x, target).fallback


@pytest.mark.parametrize("op, make", [
    (rotated_by_complex_frequencies,
     lambda: (torch.randn(6, 8), torch.polar(torch.ones(2, 5, 4), torch.randn(2, 5, 4)))),
    (doubled_through_addresses, lambda: (torch.randn(8), torch.randn(9))),
    (writes_and_returns_its_input, lambda: (torch.randn(3, 5), torch.randn(3, 5))),
    (one_tensor_twice, lambda: (torch.randn(3, 5),)),
], ids=lambda v: v.name if isinstance(v, tt.TileOp) else "")
def test_plans_of_aliases_addresses_and_complex_views_round_trip_through_bytes(op, make):
    plan = op.trace(*make())
    (loaded,) = tt._C.plans_from_bytes(op.export_plans([plan]))["plans"]
    assert list(loaded.outputs) == list(plan.outputs)
    assert [(g.dtype, g.ndim) for g in loaded.tensor_guards] == [(g.dtype, g.ndim) for g in plan.tensor_guards]
    assert [(v.base, v.dtype, v.offset.code) for v in loaded.views] == [(v.base, v.dtype, v.offset.code)
                                                                       for v in plan.views]
    assert [[e.code for a in s.args for e in a.ints] for s in loaded.aten_steps] == \
        [[e.code for a in s.args for e in a.ints] for s in plan.aten_steps]
