"""Ops that take and return lists of tensors (``list[Tensor]`` arguments, a
``list[Tensor]`` return), written as multi-tensor wrappers are in the wild
(foreach-style scaling, concatenation, stacking). Shared by
tests/test_cpu_tensor_lists.py and tests/test_gpu_tensor_lists.py; each comes
with a torch reference."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import torch_tile as tt

NS = "tt_lists"


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * alpha, mask=mask)


@triton.jit
def accumulate_kernel(acc_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    acc = tl.load(acc_ptr + offsets, mask=mask)
    tl.store(acc_ptr + offsets, acc + tl.load(x_ptr + offsets, mask=mask).to(tl.float32), mask=mask)


def _launch_scale(x, out, alpha):
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 256),)](x, out, n, alpha, BLOCK=256)


@tt.op(f"{NS}::scale_each")
def scale_each(xs: list[torch.Tensor], alpha: float) -> list[torch.Tensor]:
    """A foreach op: each tensor (any shape) scaled, as a new list."""
    outs = []
    for x in xs:
        x = x.contiguous()
        out = torch.empty_like(x)
        _launch_scale(x, out, alpha)
        outs.append(out)
    return outs


def scale_each_reference(xs, alpha):
    return [x * alpha for x in xs]


@tt.op(f"{NS}::sum_all")
def sum_all(xs: list[torch.Tensor], scale: float = 1.0) -> torch.Tensor:
    """The float32 sum of same-shaped tensors, times scale."""
    acc = torch.zeros(xs[0].shape, device=xs[0].device, dtype=torch.float32)
    for x in xs:
        if x.shape != acc.shape:
            raise ValueError(f"sum_all: shapes differ: {tuple(x.shape)} and {tuple(acc.shape)}")
        n = x.numel()
        accumulate_kernel[(triton.cdiv(n, 256),)](acc, x.contiguous(), n, BLOCK=256)
    out = torch.empty_like(acc)
    _launch_scale(acc, out, scale)
    return out


def sum_all_reference(xs, scale=1.0):
    return sum(x.float() for x in xs) * scale


@tt.op(f"{NS}::cat_flat")
def cat_flat(xs: list[torch.Tensor], alpha: float) -> torch.Tensor:
    """Flattened tensors concatenated into one allocation (its size is a sum of
    the items' sizes), each scaled into a view of it."""
    total = sum(x.numel() for x in xs)
    out = torch.empty(total, device=xs[0].device, dtype=xs[0].dtype)
    start = 0
    for x in xs:
        n = x.numel()
        _launch_scale(x.contiguous().view(-1), out[start:start + n], alpha)
        start += n
    return out


def cat_flat_reference(xs, alpha):
    return torch.cat([x.reshape(-1) for x in xs]) * alpha


@tt.op(f"{NS}::stack_scale")
def stack_scale(xs: list[torch.Tensor], alpha: float) -> torch.Tensor:
    """torch.stack of the list (an ATen step taking a list of slots), then a kernel."""
    stacked = torch.stack(xs)
    out = torch.empty_like(stacked)
    _launch_scale(stacked, out, alpha)
    return out


def stack_scale_reference(xs, alpha):
    return torch.stack(xs) * alpha


@tt.op(f"{NS}::split_scale")
def split_scale(x: torch.Tensor, parts: int) -> list[torch.Tensor]:
    """A list return whose length an int argument chooses: part k is x * (k + 1)."""
    x = x.contiguous()
    outs = []
    for k in range(parts):
        out = torch.empty_like(x)
        _launch_scale(x, out, float(k + 1))
        outs.append(out)
    return outs


def split_scale_reference(x, parts):
    return [x * (k + 1) for k in range(parts)]


@tt.op(f"{NS}::scale_into", mutates_args=("out",))
def scale_into(out: torch.Tensor, xs: list[torch.Tensor], alpha: float) -> None:
    """Writes xs[0] * alpha into out (an op that writes an argument and reads a list)."""
    _launch_scale(xs[0].contiguous(), out, alpha)


CASES = {
    "scale_each": (scale_each, scale_each_reference),
    "sum_all": (sum_all, sum_all_reference),
    "cat_flat": (cat_flat, cat_flat_reference),
    "stack_scale": (stack_scale, stack_scale_reference),
}


def case_args(name: str, device, dtype=torch.float32):
    """Arguments for a case of CASES: lists of mixed shapes where the op allows."""
    def t(*shape):
        return torch.randn(*shape, device=device, dtype=dtype)
    if name in ("sum_all", "stack_scale"):
        return ([t(4, 33), t(4, 33), t(4, 33)], 0.5)
    return ([t(4, 33), t(7), t(2, 3, 5).transpose(0, 2)], 0.5)
