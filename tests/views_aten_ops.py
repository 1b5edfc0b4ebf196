"""Ops whose bodies use views, ATen operations and the newer argument types
(Optional[Tensor], str, torch.dtype, keyword-only), written as wrappers are
in the wild. Shared by tests/test_cpu_views_aten.py and
tests/test_gpu_views_aten.py; each comes with a torch reference."""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

import torch_tile as tt

NS = "tt_views_aten"


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * alpha + y, mask=mask)


@triton.jit
def rows_kernel(x_ptr, out_ptr, stride_x, stride_out, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_out + cols, x * 2.0, mask=mask)


@tt.op(f"{NS}::flat_axpy")
def flat_axpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """view(-1), .contiguous(), .float(), then a view of the output back to x's shape."""
    assert isinstance(x, torch.Tensor) and not x.is_complex() and x.is_floating_point()
    shape = x.shape
    x1 = x.contiguous().view(-1).float()
    y1 = y.reshape(-1).to(torch.float32)
    out = torch.empty(x1.numel(), device=x.device, dtype=torch.float32)
    n = out.numel()
    BLOCK = 1 << (min(n, 1024) - 1).bit_length()
    axpy_kernel[(triton.cdiv(n, BLOCK),)](x1, y1, out, n, alpha, BLOCK=BLOCK)
    return out.view(*shape)


def flat_axpy_reference(x, y, alpha):
    return (x.float() * alpha + y.float()).reshape(x.shape)


@tt.op(f"{NS}::rows_double")
def rows_double(x: torch.Tensor) -> torch.Tensor:
    """Liger's pattern: fold leading dims with view(-1, dim), launch per row, view back."""
    shape = x.shape
    dim = shape[-1]
    x2 = x.view(-1, dim)
    out = torch.empty_like(x2, dtype=torch.float32)
    rows_kernel[(x2.shape[0],)](x2, out, x2.stride(0), out.stride(0), dim, BLOCK=triton.next_power_of_2(dim))
    return out.view(*shape)


def rows_double_reference(x):
    return x.float() * 2


@tt.op(f"{NS}::transposed_rows")
def transposed_rows(x: torch.Tensor) -> torch.Tensor:
    """A transposed slice, made contiguous (a copy), then launched per row."""
    t = x.t()[1:]
    t = t.contiguous()
    out = torch.empty(t.shape, device=x.device, dtype=torch.float32)
    rows_kernel[(t.shape[0],)](t, out, t.stride(0), out.stride(0), t.shape[1], BLOCK=triton.next_power_of_2(t.shape[1]))
    return out


def transposed_rows_reference(x):
    return x.t()[1:].float() * 2


@tt.op(f"{NS}::epilogue")
def epilogue(x: torch.Tensor, bias: Optional[torch.Tensor] = None, mode: str = "scale",
             dtype: torch.dtype = torch.float32, *, scale: float = 2.0) -> torch.Tensor:
    """Optional, str, dtype and keyword-only arguments choosing ATen steps around a kernel."""
    y = x * scale if mode == "scale" else x + scale
    if bias is not None:
        y = y + bias
    out = torch.empty(y.numel(), device=x.device, dtype=torch.float32)
    n = y.numel()
    y = y.reshape(-1)
    axpy_kernel[(triton.cdiv(n, 256),)](y, torch.zeros_like(y), out, n, 1.0, BLOCK=256)
    return out.view(x.shape).to(dtype)


def epilogue_reference(x, bias=None, mode="scale", dtype=torch.float32, *, scale=2.0):
    y = x * scale if mode == "scale" else x + scale
    if bias is not None:
        y = y + bias
    return y.float().to(dtype)


@tt.op(f"{NS}::zero_then_fill", mutates_args=["out"])
def zero_then_fill(x: torch.Tensor, out: torch.Tensor) -> None:
    """In-place ATen steps on a view of an argument (declared as mutated)."""
    out.zero_()
    out[:, 1:].copy_(x[:, 1:])


def zero_then_fill_reference(x, out):
    out.zero_()
    out[:, 1:] = x[:, 1:]


@tt.op(f"{NS}::aligned")
def aligned(x: torch.Tensor) -> torch.Tensor:
    """FlagGems' check: the address's alignment picks the path (an alignment guard)."""
    out = torch.empty_like(x)
    n = x.numel()
    alpha = 1.0 if x.data_ptr() % 16 == 0 else 3.0
    axpy_kernel[(triton.cdiv(n, 256),)](x, torch.zeros_like(x), out, n, alpha, BLOCK=256)
    return out


CASES = {
    "flat_axpy": (flat_axpy, flat_axpy_reference),
    "rows_double": (rows_double, rows_double_reference),
    "transposed_rows": (transposed_rows, transposed_rows_reference),
    "epilogue": (epilogue, epilogue_reference),
}


@tt.op(f"{NS}::reshaped_scale")
def reshaped_scale(x: torch.Tensor, shape: list[int], alpha: float) -> torch.Tensor:
    """A list[int] argument: its items are symbolic (sizes of an allocation), its length guarded."""
    out = torch.empty(shape, device=x.device, dtype=torch.float32)
    flat = x.reshape(-1).float()
    n = flat.numel()
    axpy_kernel[(triton.cdiv(n, 256),)](flat, torch.zeros_like(flat), out, n, alpha, BLOCK=256)
    return out


def reshaped_scale_reference(x, shape, alpha):
    return (x.float() * alpha).reshape(shape)


@tt.op(f"{NS}::in_device_context")
def in_device_context(x: torch.Tensor) -> torch.Tensor:
    """FlagGems' launcher: the launch under the tensor's device context, with an alignment check."""
    out = torch.empty_like(x)
    n = x.numel()
    assert x.device.index == torch.device(x.device).index
    with torch.cuda.device(x.device):
        axpy_kernel[(triton.cdiv(n, 256),)](x, x, out, n, 2.0, BLOCK=256)
    return out


@triton.jit
def chunk_sum_kernel(x_ptr, cu_ptr, chunk_ptr, out_ptr, CHUNK: tl.constexpr):
    i = tl.program_id(0)
    seq = tl.load(chunk_ptr + 2 * i)
    c = tl.load(chunk_ptr + 2 * i + 1)
    bos = tl.load(cu_ptr + seq)
    eos = tl.load(cu_ptr + seq + 1)
    offsets = bos + c * CHUNK + tl.arange(0, CHUNK)
    tl.store(out_ptr + i, tl.sum(tl.load(x_ptr + offsets, mask=offsets < eos, other=0.0), axis=0))


@tt.op(f"{NS}::chunk_sums")
def chunk_sums(x: torch.Tensor, cu_seqlens: torch.Tensor, chunk: int) -> torch.Tensor:
    """The sum of each chunk of each sequence of a packed batch, its chunk table built on the host as
    flash-linear-attention's ``prepare_chunk_indices`` builds it (``torch.arange`` without a device, moved with
    ``.to(cu_seqlens)``)."""
    lens = cu_seqlens[1:] - cu_seqlens[:-1]
    indices = torch.cat([torch.arange(n) for n in triton.cdiv(lens, chunk).tolist()])
    chunk_indices = torch.stack([indices.eq(0).cumsum(0) - 1, indices], 1).to(cu_seqlens)
    out = torch.empty(chunk_indices.shape[0], device=x.device, dtype=torch.float32)
    chunk_sum_kernel[(chunk_indices.shape[0],)](x, cu_seqlens, chunk_indices, out, CHUNK=chunk)
    return out


def chunk_sums_reference(x, cu_seqlens, chunk):
    bounds = cu_seqlens.tolist()
    return torch.stack([x[start:min(start + chunk, end)].float().sum() for begin, end in zip(bounds, bounds[1:])
                        for start in range(begin, end, chunk)])


@tt.op(f"{NS}::launches_a_host_tensor")
def launches_a_host_tensor(x: torch.Tensor) -> torch.Tensor:
    """Gives a kernel a tensor made on the host (eager: Triton refuses a CPU pointer where the kernel runs on CUDA)."""
    out = torch.empty_like(x)
    n = x.numel()
    axpy_kernel[(triton.cdiv(n, 256),)](x, torch.ones(n), out, n, 1.0, BLOCK=256)
    return out


@tt.op(f"{NS}::returns_a_host_tensor")
def returns_a_host_tensor(x: torch.Tensor) -> torch.Tensor:
    """Returns an index tensor it built on the host."""
    return torch.arange(x.shape[0])
