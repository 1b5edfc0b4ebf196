"""Ops whose bodies use tensors they did not receive (module and library state), shared by the CPU and GPU tests
of plan constants."""

import torch
import triton
import triton.language as tl

import torch_tile as tt


@triton.jit
def gather_kernel(table_ptr, index_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    index = tl.load(index_ptr + offsets, mask=mask, other=0)
    tl.store(out_ptr + offsets, tl.load(table_ptr + index, mask=mask), mask=mask)


class Lookup(torch.nn.Module):
    """A module with a lookup table in a buffer, as libraries keep one (a rotary cache, an expert map)."""

    def __init__(self, size: int, device=None):
        super().__init__()
        self.register_buffer("table", torch.arange(size, dtype=torch.float32, device=device) * 0.5)


LOOKUP = Lookup(64)


@tt.op("constants::lookup")
def lookup(index: torch.Tensor) -> torch.Tensor:
    """LOOKUP.table[index], by a kernel given the module's buffer."""
    out = torch.empty(index.shape, dtype=torch.float32, device=index.device)
    n = index.numel()
    gather_kernel[(triton.cdiv(n, 128),)](LOOKUP.table, index, out, n, BLOCK=128)
    return out


SCALES = {}  # library state kept between calls, by device


@tt.op("constants::scaled")
def scaled(x: torch.Tensor) -> torch.Tensor:
    """x * SCALES[device] + 1, through torch: the held tensor is an ATen step's argument."""
    return x * SCALES[x.device] + 1


@tt.op("constants::leaked")
def leaked(index: torch.Tensor) -> torch.Tensor:
    """Returns a view of the module's buffer itself: refused (an op's results are its own)."""
    return LOOKUP.table[: index.shape[0]]


@tt.op("constants::temporary")
def temporary(index: torch.Tensor) -> torch.Tensor:
    """A kernel given a tensor the body computes for real from host data (numpy): it lives only during the call."""
    import numpy

    table = torch.from_numpy(numpy.arange(64, dtype=numpy.float32))  # on the host: the CPU path's device
    out = torch.empty(index.shape, dtype=torch.float32, device=index.device)
    n = index.numel()
    gather_kernel[(triton.cdiv(n, 128),)](table, index, out, n, BLOCK=128)
    return out


CALLS = torch.zeros(1)  # library state the body updates in place


@tt.op("constants::counted")
def counted(x: torch.Tensor) -> torch.Tensor:
    """Counts its calls in CALLS, then branches on the data: a call whose data decides otherwise would run the body,
    which would count it again."""
    CALLS.add_(1)
    if int((x > 0).sum()) > 2:
        return x * 2
    return x * 3
