"""CPU tests: memory stays bounded when one op sees many sizes.

* The CPU path traces the body on every call. A body that uses torch ops (views, ``.contiguous()``, arithmetic)
  traces on a torch ShapeEnv, which torch's own memo tables kept alive, ~100 KB a trace, one per size: calls of
  many sizes keep no memory per size (torch_tile/trace/symbolic_shapes.py).
* 4000 sizes through dry runs (C++ plan selection, the plan's views, ATen steps and allocations on CPU tensors,
  specialization keys) keep no memory per size.
* A launch step's inline cache holds one key whatever keys its calls bring (a key per size kept one entry per
  size), and readers racing the writer never see another key's variant.
"""

import gc
import logging
import os
import tracemalloc

import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import _C
from torch_tile.trace.symbolic_shapes import _TraceShapeEnv
from torch_tile import _testing

SIZES = 4000
PYTHON_BYTES_PER_SIZE = 2048  # the bound on what the Python heap may grow by, per size, once warm
RSS_BYTES_PER_SIZE = 1024  # the bound on the process's growth per size through dry runs, once warm


@triton.jit
def scale_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask) * 2, mask=mask)


@tt.op("hardening_memory::twice")
def twice(x: torch.Tensor) -> torch.Tensor:
    """2 * x, through torch ops (recorded views and ATen steps) and a kernel."""
    flat = (x.float() + 0).contiguous().view(-1)
    out = torch.empty_like(flat)
    n = flat.numel()
    scale_kernel[(triton.cdiv(n, 256),)](flat, out, n, BLOCK=256)
    return out.view(-1, 2)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _live_shape_envs() -> int:
    gc.collect()
    return sum(isinstance(o, _TraceShapeEnv) for o in gc.get_objects())


def test_calls_of_many_sizes_keep_no_memory_per_size(caplog):
    # pytest keeps every log record it captures, and torch's structured trace log (DEBUG under pytest) records
    # each ShapeEnv guard with its stack: memory that pytest holds, not the program.
    caplog.set_level(logging.INFO, logger="torch.__trace")
    for rows in range(1000, 1020):  # warm: imports, caches of fixed size
        twice(torch.randn(rows, 2))
    sizes = range(100, 300)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for rows in sizes:
            x = torch.randn(rows, 2)
            torch.testing.assert_close(twice(x), 2 * x)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert _live_shape_envs() == 0
    assert grown < PYTHON_BYTES_PER_SIZE * len(sizes), f"{grown / len(sizes):.0f} bytes per size"


def test_dry_runs_of_many_sizes_keep_no_memory_per_size():
    base = torch.randn(SIZES + 2000, 2)
    for rows in range(SIZES, SIZES + 200):  # warm: the plan is traced, allocations come from the allocator
        _C.variant_keys(twice.qualname, (base[:rows],), {})
    gc.collect()
    before = _rss()
    for rows in range(2, SIZES + 2):
        _C.variant_keys(twice.qualname, (base[:rows],), {})
    gc.collect()
    grown = _rss() - before
    assert twice.plan_count == 1  # every size shares the plan
    assert grown < RSS_BYTES_PER_SIZE * SIZES, f"{grown / SIZES:.0f} bytes per size"


def test_inline_cache_holds_one_key_whatever_keys_a_call_site_sees():
    assert _testing.inline_cache_entries(SIZES, 1) == 1  # a new key per size
    assert _testing.inline_cache_entries(2, 1000) == 1  # alternating variants
    assert _testing.inline_cache_entries(1, 1) == 1


def test_inline_cache_readers_never_see_another_keys_variant():
    assert _testing.inline_cache_wrong_hits(readers=4, words=40, rounds=200_000) == 0
