"""CPU tests of concurrency: first calls of new ops in many threads
and processes at once, and Triton's interpreter next to its code generator.

* The write analysis (is each written tensor declared in mutates_args?) runs
  in every first call. It must give the same answer in 32 threads at once as
  alone, and store only real answers in the disk cache: never a guess made
  because the kernel could not be analysed (inline assembly with side effects).
* Interpreting a launch patches Triton process-wide; compiles and TTIR
  generation in other threads must still work meanwhile.
* Triton parses kernels' Python source (their TTIR, their cache keys); on
  CPython 3.11 before 3.11.8 two parses at once can fail, which made the
  analysis miss undeclared writes. Parses must not overlap: the tests
  simulate that Python on any version (``racy_ast_parse``).
* Every failure in any thread fails the test, with its traceback.
"""

import ast
import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import _disk_cache
from torch_tile.frontends.triton.codegen_lock import ReadersWriterLock
from torch_tile.frontends.triton import writes
from torch_tile.kernels import pdl_layer_norm
from torch_tile.frontends.triton.frontend import analysed_writes
from torch_tile import _testing
from shared_kernels import scale_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREADS = 32
_fresh = itertools.count()


@triton.jit
def add_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def axpy_inplace_kernel(y_ptr, x_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, y + alpha * tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def row_max_kernel(out_ptr, x_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))  # tl.max: a @triton.jit function of triton.language


@triton.jit
def side_effect_asm_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=False, pack=1)
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def pure_asm_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=mask)


def new_ops(block: int, device: str = "cpu") -> list:
    """Four ops nobody has called yet (a fresh namespace), with BLOCK = ``block``
    (another block is another launch configuration, so another analysis), as
    (op, case): ``case(n)`` makes arguments of about n elements on ``device``
    and a check of the op's result against torch. Shared with the GPU tests."""
    ns = f"tt_concurrency_{next(_fresh)}"

    @tt.op(f"{ns}::add")
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, block),)](out, x, y, n, BLOCK=block)
        return out

    @tt.op(f"{ns}::scale")
    def scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, block),)](out, x, alpha, n, BLOCK=block)
        return out

    @tt.op(f"{ns}::axpy_", mutates_args=("y",))
    def axpy_(y: torch.Tensor, x: torch.Tensor, alpha: float) -> None:
        n = y.numel()
        axpy_inplace_kernel[(triton.cdiv(n, block),)](y, x, alpha, n, BLOCK=block)

    @tt.op(f"{ns}::row_max")
    def row_max(x: torch.Tensor) -> torch.Tensor:
        out = x.new_empty(x.shape[0])
        row_block = max(block, triton.next_power_of_2(x.shape[1]))  # rows here are shorter: BLOCK is ``block``
        row_max_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK=row_block)
        return out

    def add_case(n):
        x, y = torch.randn(n, device=device), torch.randn(n, device=device)
        return (x, y), lambda result: torch.testing.assert_close(result, x + y)

    def scale_case(n):
        x = torch.randn(n, device=device)
        return (x, 1.5), lambda result: torch.testing.assert_close(result, x * 1.5)

    def axpy_case(n):
        y, x = torch.randn(n, device=device), torch.randn(n, device=device)
        want = y + 0.5 * x

        def check(result):
            assert result is None
            torch.testing.assert_close(y, want)

        return (y, x, 0.5), check

    def row_max_case(n):
        x = torch.randn(3, n % 50 + 1, device=device)
        return (x,), lambda result: torch.testing.assert_close(result, x.amax(dim=1))

    return [(add, add_case), (scale, scale_case), (axpy_, axpy_case), (row_max, row_max_case)]


def _failure(where: str) -> str:
    """The exception being handled, with its traceback, as text (for a test's failure message)."""
    return f"{where}:\n{traceback.format_exc()}"


def fail_on(failures: list[str], what: str) -> None:
    """Fails the test with every failure's traceback in full (an assertion on the list would truncate them)."""
    if failures:
        pytest.fail(f"{len(failures)} {what} failed:\n\n" + "\n".join(failures), pytrace=False)


def run_at_once(work, threads: int = THREADS) -> None:
    """Runs ``work(i)`` in ``threads`` threads released together; fails the
    test if any of them raised (anything: pytest's own failures, such as
    ``pytest.raises`` not raising, are BaseExceptions), with their tracebacks."""
    barrier = threading.Barrier(threads)
    errors = []

    def run(i):
        try:
            barrier.wait()
            work(i)
        except BaseException:  # noqa: BLE001 - every failure of a thread fails the test, below
            errors.append(_failure(f"thread {i}"))

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    fail_on(errors, f"of {threads} threads")


@pytest.fixture
def cache(tmp_path):
    """A fresh disk cache for this test (restored afterwards)."""
    c = _disk_cache.configure(str(tmp_path / "cache"))
    yield c
    _disk_cache.configure(None)


def _analysis_entries(cache) -> list[dict]:
    """The write analyses stored in the disk cache (the cache also keeps compiled variants)."""
    found = []
    for path, _, _ in cache.entries():
        meta, _ = cache.load(os.path.basename(path)[: -len(_disk_cache.ENTRY_SUFFIX)])
        if "written" in meta:
            found.append(meta)
    return found


# -- many threads, one process ------------------------------------------------------------------------


def test_first_and_warm_calls_of_new_ops_in_32_threads(cache):
    ops = new_ops(64) + new_ops(128)  # 8 new ops, 8 launch configurations, 4 threads each

    def work(i):
        op, case = ops[i % len(ops)]
        for n in (100 + i, 1000, 37, 4096 + i):  # the first call, then warm ones (new sizes too)
            args, check = case(n)
            check(op(*args))

    run_at_once(work)
    for op, _ in ops:  # one launch configuration each
        written = frozenset({("y_ptr",) if op.mutated_args else ("out_ptr",)})
        assert list(analysed_writes(op.qualname).values()) == [written]
    analyses = sorted(meta["written"] for meta in _analysis_entries(cache))
    assert analyses == [[["out_ptr"]]] * 6 + [[["y_ptr"]]] * 2  # one entry per configuration, all right


def undeclared_write_op(kernel=add_kernel):
    """A new op whose kernel writes its input x, which it does not declare in mutates_args."""

    @tt.op(f"tt_concurrency_{next(_fresh)}::writes_x")
    def writes_x(x: torch.Tensor, y: torch.Tensor) -> None:
        n = x.numel()
        kernel[(triton.cdiv(n, 32),)](x, x, y, n, BLOCK=32)

    return writes_x


def trace_finds_the_undeclared_write(op) -> None:
    with pytest.raises(tt.TraceError, match=r"add_kernel\(out_ptr\) writes argument 'x'"):
        op.trace(torch.randn(10), torch.randn(10))


def test_undeclared_writes_are_still_found_in_32_threads(cache):
    writes_x = undeclared_write_op()
    run_at_once(lambda i: trace_finds_the_undeclared_write(writes_x))
    assert list(analysed_writes(writes_x.qualname).values()) == [frozenset({("out_ptr",)})]


# -- Python source parsed one thread at a time --------------------------------------------------------


@pytest.fixture
def racy_ast_parse(monkeypatch):
    """``ast.parse`` as on CPython 3.11 before 3.11.8 (gh-106905), where a
    parse that overlaps another thread's can raise ``SystemError: AST
    constructor recursion depth mismatch``; here an overlap always raises, and
    each parse takes a while, so parsing in threads at once fails every time,
    on any Python. Triton parses a kernel's source in ``JITFunction.parse``
    (for its TTIR and its cache_key) and in the interpreter's rewrite."""
    real_parse = ast.parse
    guard = threading.Lock()
    state = {"inside": 0, "started": 0}

    def parse(*args, **kwargs):
        with guard:
            state["inside"] += 1
            state["started"] += 1
            overlapped, started = state["inside"] > 1, state["started"]
        try:
            time.sleep(0.002)
            tree = real_parse(*args, **kwargs)
        finally:
            with guard:
                state["inside"] -= 1
                overlapped = overlapped or state["started"] != started  # another began meanwhile
        if overlapped:
            raise SystemError("AST constructor recursion depth mismatch (simulated: another thread was parsing)")
        return tree

    monkeypatch.setattr(ast, "parse", parse)


def test_undeclared_writes_are_found_when_python_parsing_is_not_thread_safe(cache, racy_ast_parse):
    writes_x = undeclared_write_op()
    run_at_once(lambda i: trace_finds_the_undeclared_write(writes_x), threads=8)
    assert list(analysed_writes(writes_x.qualname).values()) == [frozenset({("out_ptr",)})]


def test_new_kernels_are_traced_in_threads_when_python_parsing_is_not_thread_safe(cache, racy_ast_parse):
    # New JITFunction objects: their first cache_key parses their source too.
    ops = [undeclared_write_op(triton.jit(add_kernel.fn)) for _ in range(8)]
    run_at_once(lambda i: trace_finds_the_undeclared_write(ops[i]), threads=8)


def test_compiles_in_threads_when_python_parsing_is_not_thread_safe(racy_ast_parse, monkeypatch):
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")  # each compile runs the code generator again
    (add, _), *_ = new_ops(2048)
    x = torch.randn(1000)
    plan = add.trace(x, x)
    kid, words = plan.launches[0].kernel, _testing.specialization_keys(plan, (x, x))[0]
    run_at_once(lambda i: tt.compile_variant(kid, words, 90), threads=4)


def test_an_analysis_that_raises_is_reported_retried_and_never_remembered(cache, monkeypatch):
    real_ttir, calls = writes.kernel_ttir, []

    def fails_once(*args):
        calls.append(args)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=45, after=38)")
        return real_ttir(*args)

    monkeypatch.setattr(writes, "kernel_ttir", fails_once)
    writes_x = undeclared_write_op()
    with pytest.warns(RuntimeWarning, match=r"could not analyse which tensors add_kernel writes \(SystemError"):
        writes_x.trace(torch.randn(10), torch.randn(10))  # the declaration is trusted, for this trace only
    assert analysed_writes(writes_x.qualname) == {} and _analysis_entries(cache) == []
    trace_finds_the_undeclared_write(writes_x)  # analysed again
    assert len(calls) == 2 and list(analysed_writes(writes_x.qualname).values()) == [frozenset({("out_ptr",)})]
    assert [meta["written"] for meta in _analysis_entries(cache)] == [[["out_ptr"]]]  # leaf paths


# -- the interpreter next to the code generator ------------------------------------------------------


def interpret_until(started: threading.Event, stop: threading.Event, failures: list) -> None:
    """Interprets CPU launches (tl.max included) until ``stop`` is set;
    ``started`` is set once the ops are traced, when interpretation goes on."""
    (_, add_case), (scale, scale_case), _, (row_max, row_max_case) = new_ops(256)
    try:
        while not stop.is_set():
            for op, case in ((row_max, row_max_case), (scale, scale_case)):
                args, check = case(50_000)  # many programs: the patches stay on most of the time
                check(op(*args))
                started.set()
    except BaseException:  # noqa: BLE001 - reported by the test
        failures.append(_failure("interpreting"))
    finally:
        started.set()


def _next_to_interpretation(work, rounds: int) -> None:
    """Runs ``work(round)`` ``rounds`` times while another thread keeps
    interpreting; a failure of either fails the test."""
    started, stop, failures = threading.Event(), threading.Event(), []
    interpreter = threading.Thread(target=interpret_until, args=(started, stop, failures))
    interpreter.start()
    started.wait(timeout=300)
    try:
        for r in range(rounds):
            work(r)  # runs in the test's thread: a failure fails the test as it is
    finally:
        stop.set()
        interpreter.join()
    fail_on(failures, "interpreting thread")


def test_compiles_work_while_another_thread_interprets(monkeypatch):
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")  # each compile runs the code generator again
    ops = [op for op, _ in new_ops(512)]
    add = ops[0]
    x = torch.randn(1000)
    plan = add.trace(x, x)
    kid, words = plan.launches[0].kernel, _testing.specialization_keys(plan, (x, x))[0]

    def compile_once(_):
        compiled, _ = tt.compile_variant(kid, words, 90)
        assert compiled.asm["cubin"]

    _next_to_interpretation(compile_once, rounds=4)


def test_first_traces_work_while_another_thread_interprets():
    def first_trace(r):
        (add, _), _, (axpy_, _), _ = new_ops(16 << r)  # new configurations: the analysis runs each round
        x = torch.randn(1000)
        add.trace(x, x)
        axpy_.trace(x, x, 2.0)
        assert list(analysed_writes(add.qualname).values()) == [frozenset({("out_ptr",)})]
        assert list(analysed_writes(axpy_.qualname).values()) == [frozenset({("y_ptr",)})]

    _next_to_interpretation(first_trace, rounds=6)


# -- analyses that cannot be made ---------------------------------------------------------------------


def _asm_op(kernel):
    @tt.op(f"tt_concurrency_{next(_fresh)}::asm")
    def asm(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty(x.shape, dtype=torch.int32, device=x.device)
        n = x.numel()
        kernel[(triton.cdiv(n, 64),)](out, x, n, BLOCK=64)
        return out

    return asm


def test_a_kernel_with_side_effect_asm_is_not_analysed_and_nothing_is_stored(cache):
    asm = _asm_op(side_effect_asm_kernel)
    asm.trace(torch.randn(100).view(torch.int32))  # the declaration (none) is trusted
    assert list(analysed_writes(asm.qualname).values()) == [None]
    assert _analysis_entries(cache) == []
    pure = _asm_op(pure_asm_kernel)  # pure asm touches no memory: analysable, and stored
    pure.trace(torch.randn(100).view(torch.int32))
    assert list(analysed_writes(pure.qualname).values()) == [frozenset({("out_ptr",)})]
    assert [meta["written"] for meta in _analysis_entries(cache)] == [[["out_ptr"]]]


def test_pdl_kernels_are_not_analysed_and_nothing_is_stored(cache):
    x, w, b = torch.randn(8, 100), torch.randn(100), torch.randn(100)
    pdl_layer_norm.layer_norm_pdl.trace(x, w, b, 1e-5, device=torch.device("cuda"))  # griddepcontrol asm
    assert None in analysed_writes(pdl_layer_norm.layer_norm_pdl.qualname).values()
    assert _analysis_entries(cache) == []


def test_the_analysis_calls_neither_of_torchs_guessing_entry_points(monkeypatch):
    from torch._higher_order_ops import triton_kernel_wrap

    def refuse(*args, **kwargs):
        raise AssertionError("called torch's identify_* (it needs the active driver and guesses on failure)")

    for name in ("identify_accessed_tensors", "identify_mutated_tensors"):
        monkeypatch.setattr(triton_kernel_wrap, name, refuse, raising=False)
    (add, _), _, (axpy_, _), _ = new_ops(32)
    x = torch.randn(100)
    add.trace(x, x)
    axpy_.trace(x, x, 1.0)
    assert list(analysed_writes(add.qualname).values()) == [frozenset({("out_ptr",)})]
    assert list(analysed_writes(axpy_.qualname).values()) == [frozenset({("y_ptr",)})]


def test_the_analysis_target_is_sm90_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert writes.analysis_capability() == 90


# -- the lock between them ----------------------------------------------------------------------------


def test_the_lock_is_reentrant_and_refuses_an_upgrade():
    lock = ReadersWriterLock()
    with lock.exclusive():
        with lock.shared(), lock.exclusive():  # an interpreted kernel that compiles: fine
            pass
    with lock.shared():
        with lock.shared():
            pass
        with pytest.raises(RuntimeError, match="wait for itself"):
            with lock.exclusive():
                pass


def test_the_lock_is_shared_by_readers_and_exclusive_for_a_writer():
    lock = ReadersWriterLock()
    inside, most_readers, writer_alone = [0], [0], []
    guard = threading.Lock()

    def reader(_):
        with lock.shared():
            with guard:
                inside[0] += 1
                most_readers[0] = max(most_readers[0], inside[0])
            threading.Event().wait(0.05)
            with guard:
                inside[0] -= 1

    def writer():
        with lock.exclusive():
            with guard:
                writer_alone.append(inside[0] == 0)

    writers = [threading.Thread(target=writer) for _ in range(4)]
    for w in writers:
        w.start()
    run_at_once(reader, threads=8)
    for w in writers:
        w.join()
    assert most_readers[0] > 1 and writer_alone == [True] * 4


# -- many processes, one cache directory ---------------------------------------------------------------

# The same new op in every process: the module is written to a file (Triton
# reads kernels' source), each process imports it and makes the first calls.
FIRST_CALL_MODULE = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    import torch_tile as tt


    @triton.jit
    def shift_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


    @triton.jit
    def shift_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


    @tt.op("tt_concurrency_processes::shift")
    def shift(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        shift_kernel[(triton.cdiv(n, 128),)](out, x, n, BLOCK=128)
        return out


    @tt.op("tt_concurrency_processes::shift_", mutates_args=("x",))
    def shift_(x: torch.Tensor) -> None:
        n = x.numel()
        shift_inplace_kernel[(triton.cdiv(n, 128),)](x, n, BLOCK=128)
""")

FIRST_CALL_WORKER = textwrap.dedent("""
    import json, threading, torch
    import first_call_ops as m

    results = []

    def call(i):
        x = torch.randn(300 + i)
        ok = torch.equal(m.shift(x), x + 1.0)
        y = x.clone()
        m.shift_(y)
        results.append(ok and torch.equal(y, x + 1.0))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"ok": results == [True] * 4}))
""")


def test_processes_started_at_once_make_first_calls_on_one_fresh_cache(tmp_path):
    (tmp_path / "first_call_ops.py").write_text(FIRST_CALL_MODULE)
    cache_dir = tmp_path / "cache"
    env = {**os.environ, "TORCH_TILE_CACHE_DIR": str(cache_dir), "TORCH_TILE_TEST_SUBPROCESS": "1",
           "PYTHONPATH": os.pathsep.join([ROOT, str(tmp_path)])}
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_CALL_WORKER], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1]) == {"ok": True}, err
    analyses = _analysis_entries(_disk_cache.DiskCache(str(cache_dir)))
    assert sorted(meta["written"] for meta in analyses) == [[["out_ptr"]], [["x_ptr"]]]
