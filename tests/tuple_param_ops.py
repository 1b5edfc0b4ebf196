"""Test-local tile ops whose kernels take tuple-typed parameters (Triton's tuple
arguments), shared by tests/test_cpu_tuple_params.py and
tests/test_gpu_tuple_params.py; importing registers them under
``torch.ops.tt_tuple_test``:

* ``affine``: nested tuples mixing tensors, None, ints, op floats and a
  ``tl.constexpr`` leaf: ``out[i * step] = x[i] * a + b + SHIFT``;
* ``copy_rows``: namedtuples (field access in the kernel) of a pointer and a row stride;
* ``scale_into`` / ``scale_into_undeclared`` / ``scale_into_read_declared``: a
  store through a tuple member, declared, undeclared, and declared along with
  the member it only reads;
* ``add_desc``: tensor descriptors (TMA, sm_90+) nested in a tuple;
* ``accumulate``: an autotuned in-place update through a tuple member.
"""

from collections import namedtuple

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import torch_tile as tt

NS = "tt_tuple_test"
BLOCK = 128
SHIFT = 3
DESC_BLOCK = 32

Strided = namedtuple("Strided", ["ptr", "stride"])


@triton.jit
def affine_kernel(io, sizes, coef, BLOCK: tl.constexpr):
    x = io[0]
    out = io[1][0]  # io[1][1] is None
    n, step = sizes
    a = coef[0]
    b = coef[1][0]
    shift = coef[1][1]  # a tl.constexpr leaf
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x + offs, mask=mask) * a + b + shift
    tl.store(out + offs * step, y.to(out.dtype.element_ty), mask=mask)


def affine_arguments(x, out, a, b, step):
    """The tuple arguments of ``affine_kernel`` (the op's body and the tests' direct launches share them)."""
    return (x, (out, None)), (x.numel(), step), (a, (b, tl.constexpr(SHIFT)))


@tt.op(f"{NS}::affine")
def affine(x: torch.Tensor, a: float, b: float, step: int) -> torch.Tensor:
    """``out[::step] = x * a + b + SHIFT`` for a contiguous 1-D x; the other elements of out are zero."""
    n = x.numel()
    out = torch.zeros(n * step, dtype=x.dtype, device=x.device)
    affine_kernel[(triton.cdiv(n, BLOCK),)](*affine_arguments(x, out, a, b, step), BLOCK=BLOCK)
    return out


def affine_reference(x, a, b, step):
    out = torch.zeros(x.numel() * step, dtype=torch.float64, device=x.device)
    out[::step] = x.double() * a + b + SHIFT
    return out


@triton.jit
def copy_rows_kernel(src, dst, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    values = tl.load(src.ptr + row * src.stride + offs, mask=mask)
    tl.store(dst.ptr + row * dst.stride + offs, values, mask=mask)


@tt.op(f"{NS}::copy_rows")
def copy_rows(x: torch.Tensor) -> torch.Tensor:
    """A copy of a 2-D x whose rows are contiguous (any row stride)."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    copy_rows_kernel[(x.shape[0],)](Strided(x, x.stride(0)), Strided(out, out.stride(0)), x.shape[1],
                                   BLOCK=triton.next_power_of_2(x.shape[1]))
    return out


@triton.jit
def scale_pair_kernel(pair, n, BLOCK: tl.constexpr):
    src, dst = pair
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask) * 2, mask=mask)


def _scale_pair(x, y):
    scale_pair_kernel[(triton.cdiv(x.numel(), BLOCK),)]((x, y), x.numel(), BLOCK=BLOCK)


@tt.op(f"{NS}::scale_into", mutates_args=("y",))
def scale_into(x: torch.Tensor, y: torch.Tensor) -> None:
    """y = 2 * x, stored through the second member of a tuple (declared)."""
    _scale_pair(x, y)


@tt.op(f"{NS}::scale_into_undeclared")
def scale_into_undeclared(x: torch.Tensor, y: torch.Tensor) -> None:
    """As scale_into, without declaring the write: the trace must refuse it."""
    _scale_pair(x, y)


@tt.op(f"{NS}::scale_into_read_declared", mutates_args=("x", "y"))
def scale_into_read_declared(x: torch.Tensor, y: torch.Tensor) -> None:
    """As scale_into, also declaring the tuple member it only reads (which no call writes)."""
    _scale_pair(x, y)


@triton.jit
def add_desc_kernel(descs, BM: tl.constexpr, BN: tl.constexpr):
    a_desc = descs[0]
    b_desc, c_desc = descs[1]
    offsets = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    c_desc.store(offsets, a_desc.load(offsets) + b_desc.load(offsets))


@tt.op(f"{NS}::add_desc")
def add_desc(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a + b for 2-D tensors, through descriptors passed as ``(a_desc, (b_desc, c_desc))``."""
    c = torch.empty_like(a)
    a_desc, b_desc, c_desc = (TensorDescriptor.from_tensor(t, [DESC_BLOCK, DESC_BLOCK]) for t in (a, b, c))
    grid = (triton.cdiv(a.shape[0], DESC_BLOCK), triton.cdiv(a.shape[1], DESC_BLOCK))
    add_desc_kernel[grid]((a_desc, (b_desc, c_desc)), BM=DESC_BLOCK, BN=DESC_BLOCK)
    return c


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def accumulate_kernel(pair, n, BLOCK: tl.constexpr):
    src, dst = pair
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(dst + offs, mask=mask) + tl.load(src + offs, mask=mask), mask=mask)


@tt.op(f"{NS}::accumulate", mutates_args=("y",))
def accumulate(x: torch.Tensor, y: torch.Tensor) -> None:
    """y += x, autotuned, with y reached through a tuple (tuning must not run on the caller's y)."""
    n = x.numel()
    accumulate_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)]((x, y), n)
