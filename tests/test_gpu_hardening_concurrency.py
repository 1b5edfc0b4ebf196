"""GPU tests of concurrency (device machine, skipped without CUDA):
first calls of new ops in 32 threads at once on CUDA tensors, then warm calls,
every result checked against torch and every variant compiled exactly once;
and first calls that compile while another thread runs Triton's interpreter.
The ops are the CPU concurrency tests' (``new_ops``)."""

import threading

import pytest
import torch

import torch_tile as tt
from torch_tile import _disk_cache
from torch_tile.frontends.triton import writes
from torch_tile import _testing

from conftest import requires_cuda
from test_cpu_hardening_concurrency import THREADS, fail_on, interpret_until, new_ops, run_at_once

pytestmark = requires_cuda

SIZES = (1000, 37, 100_003)  # warm calls after each thread's first one (new specializations too)


@pytest.fixture
def cache(tmp_path):
    """A fresh disk cache: every variant of these tests is compiled here, not loaded."""
    c = _disk_cache.configure(str(tmp_path / "cache"))
    yield c
    _disk_cache.configure(None)


def _first_size(i: int) -> int:
    return 100 + 16 * i  # each thread's first call: divisible by 16 or not, as Triton specialises


def _variants(calls) -> set:
    """The distinct compiled variants a list of (op, case, n) calls needs: (kernel id, key words) per launch."""
    variants = set()
    for op, case, n in calls:
        args, _ = case(n)
        plan = op.trace(*args)  # traces only: nothing is compiled here
        for launch, words in zip(plan.launches, _testing.specialization_keys(plan, args)):
            variants.add((launch.kernel, tuple(words)))
    return variants


def test_first_and_warm_calls_of_new_ops_in_32_threads(cache):
    # 8 new ops, 4 threads each; their blocks are this test's alone, so no variant was compiled before
    ops = new_ops(64, "cuda") + new_ops(128, "cuda")
    compiles, compiled_here = tt.runtime_counters()["compiles"], tt.compile_count()

    def work(i):
        op, case = ops[i % len(ops)]
        for n in (_first_size(i), *SIZES):
            args, check = case(n)
            check(op(*args))
        torch.cuda.synchronize()

    run_at_once(work)
    expected = _variants([(*ops[i % len(ops)], n) for i in range(THREADS) for n in (_first_size(i), *SIZES)])
    assert tt.runtime_counters()["compiles"] - compiles == len(expected)  # one per variant, not per thread
    assert tt.compile_count() - compiled_here == len(expected)  # ...and each one compiled by Triton once
    for op, _ in ops:
        assert list(op._written.values()) == [frozenset({("y_ptr",) if op.mutated_args else ("out_ptr",)})]

    traces = tt.runtime_counters()["traces"]
    run_at_once(work)  # warm: no trace, no compile
    assert tt.runtime_counters()["traces"] == traces
    assert tt.runtime_counters()["compiles"] - compiles == len(expected)


def test_first_calls_compile_while_another_thread_interprets(cache, monkeypatch):
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")  # each compile runs Triton's code generator
    started, stop, failures = threading.Event(), threading.Event(), []
    interpreter = threading.Thread(target=interpret_until, args=(started, stop, failures))
    interpreter.start()
    started.wait(timeout=300)
    try:
        ops = new_ops(256, "cuda") + new_ops(1024, "cuda")

        def work(i):
            op, case = ops[i % len(ops)]
            args, check = case(_first_size(i))
            check(op(*args))
            torch.cuda.synchronize()

        run_at_once(work, threads=16)
    finally:
        stop.set()
        interpreter.join()
    fail_on(failures, "interpreting thread")


def test_the_analysis_targets_the_current_gpu():
    major, minor = torch.cuda.get_device_capability()
    assert writes.analysis_capability() == major * 10 + minor
