"""Sum of all elements in ONE cooperative launch (``launch_cooperative_grid=True``)
with a grid-wide barrier.

The grid has ``min(SMs, cdiv(n, BLOCK))`` programs (at most ``MAX_PROGRAMS``).
Each program sums a strided range of blocks into ``partials[pid]``; then every
program arrives at a grid barrier (a counter in a zeroed buffer the body
allocates: a release ``atomic_add`` to arrive, acquire atomic reads to spin
until all programs have arrived, as Inductor's ``x_grid_barrier``), and program
0 adds the partials. Spinning programs wait for programs that have not started
yet, which is safe only because the cooperative launch guarantees that the
whole grid is co-resident (the driver refuses a grid that cannot be, with
``CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE``; one program per SM always fits).

Result dtype: as ``torch.sum`` for floating inputs, the input's dtype (a 0-d
tensor); accumulation is float32 (float64 for float64 input). An empty input
sums to 0.

The SM count is read in the body with ``torch.cuda.get_device_properties``
(plain Python, allowed in a traced body); it becomes a constant of the plan, so
a plan traced on one GPU model and reused on another with fewer SMs may ask for
more programs than that GPU can co-schedule (the launch then fails with a clear
error rather than hanging). Without CUDA (fake tensors, compile-only
inspection) ``FALLBACK_SMS`` stands in.

CPU (Triton's interpreter): the interpreter runs the programs one after another,
so a spinning barrier would never be passed by program 0. The body launches the
``GRID_SYNC=False`` variant instead (with ``CPU_PROGRAMS`` programs, so the
strided loop is still exercised): each program counts itself in with a plain
atomic and the last one to arrive adds the partials.
"""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import acc_dtype, check_contiguous, check_float, stats_dtype

BLOCK = 1024
MAX_PROGRAMS = 1024  # partials are added with one tl.arange of this size (more than any GPU's SM count)
CPU_PROGRAMS = 4
FALLBACK_SMS = 132  # an H100 SXM / H200; used only where CUDA is not available


@triton.jit
def _add_partials(partial_ptr, out_ptr, num_partials, MAX_PROGRAMS: tl.constexpr):
    idx = tl.arange(0, MAX_PROGRAMS)
    # volatile: read what the other programs wrote, not a cached line.
    parts = tl.load(partial_ptr + idx, mask=idx < num_partials, other=0.0, volatile=True)
    tl.store(out_ptr, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty))


@triton.jit
def sum_cooperative_kernel(x_ptr, partial_ptr, counter_ptr, out_ptr, n, BLOCK: tl.constexpr,
                           MAX_PROGRAMS: tl.constexpr, ACC: tl.constexpr, GRID_SYNC: tl.constexpr):
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    acc = tl.zeros((BLOCK,), dtype=ACC)
    for start in range(pid * BLOCK, n, num_programs * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(ACC)
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))
    if GRID_SYNC:
        # Grid barrier. The CTA barrier orders this program's partial store before the
        # release arrival; the acquire reads make every arrived program's partial visible.
        tl.debug_barrier()
        tl.atomic_add(counter_ptr, 1, sem="release")
        arrived = tl.atomic_add(counter_ptr, 0, sem="acquire")
        while arrived < num_programs:
            arrived = tl.atomic_add(counter_ptr, 0, sem="acquire")
        tl.debug_barrier()
        if pid == 0:
            _add_partials(partial_ptr, out_ptr, num_programs, MAX_PROGRAMS)
    else:
        # Interpreter: programs run in sequence, so nobody may wait; the last to arrive adds up.
        arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel")
        if arrived == num_programs - 1:
            _add_partials(partial_ptr, out_ptr, num_programs, MAX_PROGRAMS)


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (FALLBACK_SMS where CUDA is not available)."""
    if not torch.cuda.is_available():
        return FALLBACK_SMS
    return torch.cuda.get_device_properties(device).multi_processor_count


@tt.op("tile::sum_cooperative")
def sum_cooperative(x: torch.Tensor) -> torch.Tensor:
    """torch.sum(x) (all elements, a 0-d tensor of x's dtype) for a contiguous floating tensor, in one
    cooperative launch with a grid barrier (see the module docstring)."""
    op = "tile::sum_cooperative"
    check_float(op, "x", x)
    check_contiguous(op, "x", x)  # read as a flat vector
    n = x.numel()
    out = torch.zeros((), dtype=x.dtype, device=x.device)  # stays 0 for an empty x (no launch)
    on_gpu = x.device.type == "cuda"
    programs = min(sm_count(x.device), MAX_PROGRAMS) if on_gpu else CPU_PROGRAMS
    grid = tt.sym_min(triton.cdiv(n, BLOCK), programs)
    acc = acc_dtype(x.dtype)
    partials = torch.empty((programs,), dtype=stats_dtype(x.dtype), device=x.device)  # in the accumulation dtype
    counter = torch.zeros((1,), dtype=torch.int32, device=x.device)  # the barrier: fresh for every call
    sum_cooperative_kernel[(grid,)](x, partials, counter, out, n, BLOCK=BLOCK, MAX_PROGRAMS=MAX_PROGRAMS, ACC=acc,
                                    GRID_SYNC=on_gpu, num_warps=4, launch_cooperative_grid=on_gpu)
    return out
