"""Test ops launching kernels that take Triton host tensor descriptors (TMA),
shared by the CPU and GPU descriptor tests."""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import torch_tile as tt

NS = "tt_test_tma"
BLOCK = 32


@triton.jit
def scale_kernel(in_desc, out_desc, alpha, BM: tl.constexpr, BN: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    x = in_desc.load([pid_m * BM, pid_n * BN])
    out_desc.store([pid_m * BM, pid_n * BN], (x * alpha).to(out_desc.dtype))


def _grid(x):
    return (triton.cdiv(x.shape[0], BLOCK), triton.cdiv(x.shape[1], BLOCK))


@tt.op(f"{NS}::scale")
def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha * x for a 2-D x, through two descriptors (from_tensor)."""
    out = torch.empty_like(x)
    scale_kernel[_grid(x)](TensorDescriptor.from_tensor(x, [BLOCK, BLOCK]),
                           TensorDescriptor.from_tensor(out, [BLOCK, BLOCK]), alpha, BM=BLOCK, BN=BLOCK)
    return out


@tt.op(f"{NS}::scale_", mutates_args=("x",))
def scale_(x: torch.Tensor, alpha: float) -> None:
    """x *= alpha in place: the kernel stores through a descriptor over x."""
    desc = TensorDescriptor(x, x.shape, x.stride(), [BLOCK, BLOCK])
    scale_kernel[_grid(x)](desc, desc, alpha, BM=BLOCK, BN=BLOCK)


@triton.jit
def add3_kernel(a_desc, b_desc, c_desc, BM: tl.constexpr, BN: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offsets = [pid_m * BM, pid_n * BN]
    c_desc.store(offsets, a_desc.load(offsets) + b_desc.load(offsets))


@tt.op(f"{NS}::add3")
def add3(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a + b through three descriptors (the host-overhead case of the benchmark)."""
    c = torch.empty_like(a)
    descs = [TensorDescriptor.from_tensor(t, [BLOCK, BLOCK]) for t in (a, b, c)]
    add3_kernel[_grid(a)](*descs, BM=BLOCK, BN=BLOCK)
    return c
