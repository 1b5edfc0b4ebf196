"""CPU tests: every error a call raises names the op, and the body's line or the kernel where one is involved.

* Integer arithmetic on sizes that divides by zero (``triton.cdiv(n, k)`` with ``k = 0``): the trace names op
  and line (a ``TraceZeroDivisionError``, also a ZeroDivisionError: run in Python, the body raises one too, so
  calls fall back, and only calls whose divisor is zero); a plan traced for another ``k`` and evaluated in C++
  for a call with ``k = 0`` names the op, the expression and its use (grid, kernel argument, allocation).
* A kernel that fails under Triton's interpreter (the CPU path) names op, kernel and launch line, in every
  thread of many that call at once.
* An error the body raises while traced, where the op does not fall back, carries a note naming op and line.
"""

import re
import threading

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import _C
from shared_kernels import copy_kernel

HERE = re.escape(__file__)


def _grid_divides(x: torch.Tensor, k: int) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, k),)](x, out, n, BLOCK=128)
    return out


def _argument_divides(x: torch.Tensor, k: int) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 128),)](x, out, n // k, BLOCK=128)
    return out


def _allocation_divides(x: torch.Tensor, k: int) -> torch.Tensor:
    out = torch.zeros(x.numel() % k + x.numel(), device=x.device)
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    return out


def _float_divides(x: torch.Tensor, k: int) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    block = int(128 * (k / k))
    copy_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    return out


grid_divides = tt.op("hardening_errors::grid_divides", _grid_divides)
grid_divides_strict = tt.op("hardening_errors::grid_divides_strict", _grid_divides, fallback=False)
argument_divides = tt.op("hardening_errors::argument_divides", _argument_divides)
allocation_divides = tt.op("hardening_errors::allocation_divides", _allocation_divides)
float_divides_strict = tt.op("hardening_errors::float_divides_strict", _float_divides, fallback=False)


def _line_of(fn, text: str) -> int:
    """The line of ``fn``'s source holding ``text``."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


# -- division by zero in a size expression -----------------------------------------------------------------


@pytest.mark.parametrize("op, fn, text", [
    (grid_divides_strict, _grid_divides, "triton.cdiv(n, k)"),
    (float_divides_strict, _float_divides, "k / k"),
])
def test_division_by_zero_while_tracing_names_op_and_line(op, fn, text):
    with pytest.raises(ZeroDivisionError, match=rf"^{op.qualname}: {HERE}:{_line_of(fn, text)}: division by zero") \
            as raised:
        op(torch.randn(300), 0)
    assert isinstance(raised.value, tt.TraceError)
    with pytest.raises(ZeroDivisionError, match=rf"^{op.qualname}: {HERE}:{_line_of(fn, text)}: division by zero"):
        op.trace(torch.randn(300), 0)


def test_division_by_zero_falls_back_only_where_the_divisor_is_zero():
    x = torch.randn(300)
    plan = grid_divides.shape_plan((x, 0), x.device)
    assert "division by zero" in plan.fallback
    assert "k == 0" in [g.text for g in plan.guards]  # calls with another k take a native plan
    # Run in Python, the body divides by zero itself, and says in which op and line.
    with pytest.raises(ZeroDivisionError) as raised:
        grid_divides(x, 0)
    line = _line_of(_grid_divides, "triton.cdiv(n, k)")
    assert any(f"torch_tile op {grid_divides.qualname} at {__file__}:{line}" in note for note in raised.value.__notes__)
    torch.testing.assert_close(grid_divides(x, 3), x, rtol=0, atol=0)


@pytest.mark.parametrize("op, fn, text, use", [
    (grid_divides, _grid_divides, "triton.cdiv(n, k)", "grid dimension 0 of kernel copy_kernel"),
    (argument_divides, _argument_divides, "n // k", "argument 2 of kernel copy_kernel"),
    (allocation_divides, _allocation_divides, None, "size 0 of allocation 0"),
])
def test_division_by_zero_in_a_later_calls_plan_names_op_expression_and_use(op, fn, text, use):
    x = torch.randn(300)
    _C.variant_keys(op.qualname, (x, 4), {})  # traces the plan (no guard on k), then evaluates it in C++
    site = rf" \(launched at {HERE}:{_line_of(fn, 'copy_kernel[')}\)" if text is not None else ""
    with pytest.raises(ValueError, match=rf"^{op.qualname}: {re.escape(use)}{site}: (division|modulo) by zero "
                                         r"while evaluating `[^`]*k[^`]*`"):
        _C.variant_keys(op.qualname, (x, 0), {})


# -- kernels that fail under the interpreter ---------------------------------------------------------------


@triton.jit
def uncompilable_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, 3)  # not a power of 2: Triton refuses it
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets))


@tt.op("hardening_errors::uncompilable")
def uncompilable(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    uncompilable_kernel[(1,)](x, out, x.numel(), BLOCK=16)
    return out


def test_kernel_failing_under_the_interpreter_names_op_kernel_and_line_in_every_thread():
    errors = []

    def call():
        try:
            uncompilable(torch.randn(16))
        except Exception as e:  # noqa: BLE001 - each thread's error is checked below
            errors.append(e)

    with pytest.warns(RuntimeWarning):  # the write analysis cannot compile the kernel either; it says so
        threads = [threading.Thread(target=call) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    line = _line_of(uncompilable.fn, "uncompilable_kernel[")
    assert len(errors) == 8
    for e in errors:
        assert re.match(rf"{uncompilable.qualname}: kernel uncompilable_kernel \(launched at {HERE}:{line}\): "
                        r"Triton's interpreter failed: .*power of 2", str(e)), str(e)
        assert isinstance(e, tt.KernelError) and e.__cause__ is not None


# -- the body's own errors ---------------------------------------------------------------------------------


@tt.op("hardening_errors::refuses", fallback=False)
def refuses(x: torch.Tensor) -> torch.Tensor:
    if x.numel() > 4:
        raise LookupError("the body refuses this size")
    return torch.empty_like(x)


def test_an_error_the_body_raises_while_traced_names_op_and_line():
    with pytest.raises(LookupError, match="the body refuses this size") as raised:
        refuses.trace(torch.randn(8))
    line = _line_of(refuses.fn, "raise LookupError")
    assert f"(in the body of torch_tile op {refuses.qualname} at {__file__}:{line}, traced into a launch plan)" in \
        raised.value.__notes__
