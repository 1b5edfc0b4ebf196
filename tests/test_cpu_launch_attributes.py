"""CPU tests: launch options that become CUDA launch attributes
(``launch_pdl`` -> programmatic stream serialization, ``launch_cooperative_grid``
-> cooperative launch) reach the compiled variant's metadata, which the C++
launcher turns into ``cuLaunchKernelEx`` attributes (csrc/runtime/launch/plan_executor.cpp);
and a kernel that torch's write analysis cannot analyse (impure inline asm, as
PDL's ``griddepcontrol``) is trusted as declared instead of being refused.
Compiled for sm_90 without a GPU."""

import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile.frontends.triton.compile import _compile_callback
from torch_tile import _testing

NS = "tt_cpu_launch_attributes"


@triton.jit
def pdl_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.extra.cuda.gdc_wait()  # wait for the previous grid's writes (PDL)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
    tl.extra.cuda.gdc_launch_dependents()


@tt.op(f"{NS}::pdl_double")
def pdl_double(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    pdl_scale_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256, launch_pdl=True)
    return out


@triton.jit
def increment_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@tt.op(f"{NS}::cooperative_increment", mutates_args=("x",))
def cooperative_increment(x: torch.Tensor) -> None:
    increment_kernel[(4,)](x, x.numel(), BLOCK=256, launch_cooperative_grid=True)


def _compiled(op, *args) -> dict:
    plan = op.trace(*args)
    words = _testing.specialization_keys(plan, args)[0]
    return _compile_callback(plan.launches[0].kernel, words, 90)


def test_pdl_option_reaches_the_launch_metadata():
    entry = _compiled(pdl_double, torch.randn(1000))
    assert entry["launch_pdl"] is True and entry["launch_cooperative_grid"] is False
    assert entry["cubin"]


def test_cooperative_option_reaches_the_launch_metadata():
    entry = _compiled(cooperative_increment, torch.randn(1000))
    assert entry["launch_cooperative_grid"] is True and entry["launch_pdl"] is False


def test_unanalysable_kernel_is_trusted_not_refused():
    # torch's analysis gives up on impure inline asm and would report every input as written;
    # that answer is not used, so the op (which writes only its output) traces.
    plan = pdl_double.trace(torch.randn(64))
    assert len(plan.launches) == 1
