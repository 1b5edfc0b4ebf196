"""CPU tests: a child made by ``os.fork()`` while another thread is inside a tile-op call (tracing a body,
holding a lock of torch_tile, building a disk-cache entry) can call tile ops.

The child has only the thread that forked: whatever another thread held at that moment stays held in the
child unless torch_tile releases it there. Each test forks while a thread of this process is blocked in
the middle of such work, then runs tile ops in the child; a child that has not exited after
``CHILD_TIMEOUT`` seconds hung, and is killed. The child's exit status is the test's verdict (its
traceback, if any, goes to the captured stderr).
"""

import contextlib
import inspect
import itertools
import os
import sys
import threading
import time
import traceback

import torch
import triton
from triton.runtime.jit import JITFunction

import torch_tile as tt
from torch_tile import _C, _disk_cache
from torch_tile.frontends.triton import codegen_lock
from shared_kernels import copy_kernel

CHILD_TIMEOUT = 120
_fresh = itertools.count()


def new_copy_op():
    """A fresh op (x -> a copy of x) whose body blocks while its ``gate`` is closed: ``gate.entered`` is set
    once a call is inside the body."""
    gate = Gate()

    @tt.op(f"forked_{next(_fresh)}::copy")
    def copy(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        gate.pass_through()
        copy_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
        return out

    return copy, gate


def open_copy_op():
    """A fresh copy op that never blocks."""
    op, gate = new_copy_op()
    gate.opened.set()
    return op


class Gate:
    """Blocks the threads that reach it until opened; the forked child finds it open."""

    def __init__(self):
        self.entered, self.opened = threading.Event(), threading.Event()

    def pass_through(self):
        if not self.opened.is_set():
            self.entered.set()
            self.opened.wait()


def child_result(child, then=lambda: None, timeout: float = CHILD_TIMEOUT) -> str:
    """Forks; the child runs ``child()`` and exits 0 if it returned, 1 if it raised; the parent runs
    ``then()``. Returns 'ok', 'failed' or 'hung' (still running after ``timeout`` seconds: killed)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child()
            code = 0
        except BaseException:  # noqa: BLE001 - any failure in the child is its exit status
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    then()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "ok" if os.waitstatus_to_exitcode(status) == 0 else "failed"
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"


@contextlib.contextmanager
def thread_blocked_in(work, entered: threading.Event, opened: threading.Event):
    """Runs ``work()`` in a thread until ``entered`` is set; on exit opens ``opened`` and joins it."""
    errors = []

    def run():
        try:
            work()
        except BaseException:  # noqa: BLE001 - reported by the test below
            errors.append(traceback.format_exc())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert entered.wait(60), errors
    try:
        yield
    finally:
        opened.set()
        thread.join(60)
    assert not errors, errors[0]


def check_copy(op, n=300):
    x = torch.randn(n)
    torch.testing.assert_close(op(x), x, rtol=0, atol=0)


# -- a thread inside a body ---------------------------------------------------------------------------


def test_child_of_a_fork_during_a_trace_calls_tile_ops():
    blocked, gate = new_copy_op()
    other = open_copy_op()
    triton_run, next_power_of_2 = JITFunction.run, triton.next_power_of_2

    def child():
        gate.opened.set()
        check_copy(other)
        check_copy(blocked)
        # The patches the parent's tracing thread had applied are not left behind once the child's calls end.
        assert JITFunction.run is triton_run and triton.next_power_of_2 is next_power_of_2

    with thread_blocked_in(lambda: check_copy(blocked), gate.entered, gate.opened):
        assert child_result(child) == "ok"


def test_child_of_a_fork_during_a_native_trace_is_not_blocked_by_the_ops_trace_mutex():
    # A dry run (what export_bundle does with CPU examples) traces through the C++ path: NativeOp::plan_for
    # holds the op's trace mutex while the body runs in Python.
    blocked, gate = new_copy_op()
    reference = open_copy_op()  # the same kernel and launch: the same keys
    x = torch.randn(300)
    expected = _C.variant_keys(reference.qualname, (x,), {})
    assert len(expected) == 1

    def child():
        gate.opened.set()
        assert _C.variant_keys(blocked.qualname, (x,), {}) == expected
        check_copy(blocked)

    with thread_blocked_in(lambda: _C.variant_keys(blocked.qualname, (x,), {}), gate.entered, gate.opened):
        assert child_result(child) == "ok"


# -- a thread holding a lock of torch_tile ------------------------------------------------------------

LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def torch_tile_locks() -> dict:
    """Every lock in torch_tile's modules, by where it is: module globals, attributes of the classes the
    modules define and of their module-level objects (registries, the active disk cache). The code-generation
    lock counts twice: held shared and held exclusively. Values: a context manager factory holding the lock."""
    _disk_cache.active()
    found, seen = {}, set()
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("torch_tile") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            places = [(f"{name}.{attr}", value)]
            owner = value if inspect.isclass(value) else type(value)
            ours = (owner.__module__ or "").startswith("torch_tile")  # a class made at run time may have none
            if ours and not inspect.isroutine(value) and hasattr(value, "__dict__"):
                places += [(f"{name}.{attr}.{k}", v) for k, v in list(vars(value).items())]
            for where, v in places:
                if id(v) in seen:
                    continue
                if isinstance(v, LOCK_TYPES):
                    seen.add(id(v))
                    found[where] = lambda lock=v: lock
                elif isinstance(v, codegen_lock.ReadersWriterLock):
                    seen.add(id(v))
                    found[where + " (shared)"] = v.shared
                    found[where + " (exclusive)"] = v.exclusive
    return found


def test_the_audit_finds_the_locks_it_should():
    where = torch_tile_locks()
    for expected in ("torch_tile.frontends.triton.codegen_lock._lock (exclusive)",
                     "torch_tile.frontends.triton.codegen_lock._parsing",
                     "torch_tile._disk_cache._active_lock", "torch_tile._disk_cache._active._lock",
                     "torch_tile._launch_mode._patch_lock", "torch_tile.frontends.triton.kernels.REGISTRY._lock",
                     "torch_tile.frontends.cuda.kernels.REGISTRY._lock"):
        assert any(w == expected for w in where), (expected, sorted(where))


def test_child_of_a_fork_while_a_thread_holds_a_lock_calls_tile_ops():
    op = open_copy_op()
    check_copy(op)  # traced, analysed and interpreted once in this process
    results = {}
    for where, holding in torch_tile_locks().items():
        entered, opened = threading.Event(), threading.Event()

        def hold(holding=holding, entered=entered, opened=opened):
            with holding():
                entered.set()
                opened.wait()

        def child(holding=holding):
            with holding():  # free in the child: its holder is not there
                pass
            check_copy(op)
            check_copy(open_copy_op())

        with thread_blocked_in(hold, entered, opened):
            results[where] = child_result(child, timeout=CHILD_TIMEOUT / 4)
    stuck = {w: r for w, r in results.items() if r != "ok"}
    assert not stuck, f"children that did not finish, by the lock a thread held at the fork: {stuck}"


# -- a thread building a disk-cache entry -------------------------------------------------------------


def test_child_of_a_fork_during_a_cache_entry_build_can_build_it(tmp_path):
    # Writers of one entry hold a file lock; the child inherits the descriptor that holds it.
    cache = _disk_cache.DiskCache(str(tmp_path / "cache"))
    key = "ab" * 32
    entered, opened = threading.Event(), threading.Event()

    def abandoned_build():  # holds the entry's lock, then gives up: nothing is stored
        with cache.writer_lock(key):
            entered.set()
            opened.wait()

    def child():
        assert cache.get_or_build(key, lambda: ({"by": "child"}, b"blob")) == ({"by": "child"}, b"blob")

    with thread_blocked_in(abandoned_build, entered, opened):
        # The parent's builder lets go right after the fork; the child must then get the lock.
        assert child_result(child, then=opened.set) == "ok"
