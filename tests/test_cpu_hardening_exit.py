"""CPU tests of the process's end and of interrupts, in subprocesses.

* A process that exits while other threads trace op bodies (through the CPU path and through C++'s trace hook)
  and compile variants (through the disk cache) exits with status 0: no abort from a thread the ending
  interpreter stops inside torch or torch_tile (torch_tile/_interpreter_exit.py, csrc/python/interpreter_exit.h).
* Ctrl-C (SIGINT) during a first trace whose body sleeps, during a compile and during the disk cache's write of
  its entry is a ``KeyboardInterrupt``, never an error of the call; the disk cache then holds only whole,
  valid entries and no temporary file.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from torch_tile._disk_cache import ENTRY_SUFFIX, DiskCache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The child's op and kernel: a body that says when it runs (stdout), then sleeps `SLEEP` seconds.
PRELUDE = textwrap.dedent("""
    import os, sys, threading, time
    import torch, triton, triton.language as tl
    import torch_tile as tt
    from torch_tile import _C, _disk_cache
    from torch_tile.frontends.triton import compile as triton_compile

    SLEEP = 0

    @triton.jit
    def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=offsets < n), mask=offsets < n)

    @tt.op("exit_probe::copy")
    def copy(x: torch.Tensor) -> torch.Tensor:
        if SLEEP:
            print("tracing", flush=True)
            time.sleep(SLEEP)
        out = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
        return out

    xs = [torch.randn(100 + i) for i in range(32)]
    (KERNEL, WORDS), = _C.variant_keys("exit_probe::copy", (xs[0],), {})
    copy.clear_plans()
    SLEEP = float(os.environ.get("BODY_SLEEP", "0"))
""")


def _run(tmp_path, body: str, args: tuple = (), env: dict = None, interrupt_after: str = None):
    """Runs PRELUDE + ``body`` with ``args`` in a fresh process with its own disk cache; with
    ``interrupt_after``, sends it SIGINT once it printed that line. Returns (status, stdout, stderr)."""
    script = tmp_path / "child.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    child_env = {**os.environ, "PYTHONPATH": ROOT, "TORCH_TILE_CACHE_DIR": str(tmp_path / "cache"),
                 "TORCH_TILE_TEST_SUBPROCESS": "1", **(env or {})}
    child = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=child_env)
    lines = []
    if interrupt_after is not None:
        for line in child.stdout:
            lines.append(line)
            if line.strip() == interrupt_after:
                child.send_signal(signal.SIGINT)
                break
    out, err = child.communicate(timeout=300)
    return child.returncode, "".join(lines) + out, err


def _assert_only_whole_entries(directory) -> int:
    """Every file of the cache is a whole, valid entry for its name (or a lock file); returns how many."""
    entries = 0
    for folder, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".lock"):
                continue
            assert name.endswith(ENTRY_SUFFIX), f"{path} is no entry (a temporary file left behind?)"
            with open(path, "rb") as f:
                recorded_key, _, _ = DiskCache._decode(f.read())
            assert recorded_key == name[: -len(ENTRY_SUFFIX)], path
            entries += 1
    return entries


# -- exit with work in flight --------------------------------------------------------------------------------

EXIT_WITH_WORK_IN_FLIGHT = """
    triton.knobs.compilation.always_compile = True  # each compile runs Triton (and ptxas)
    cache = _disk_cache.active()

    def cpu_calls():  # CPU path: each call traces the body and runs it under Triton's interpreter
        while True:
            for x in xs:
                copy(x)

    def traces():  # C++'s trace hook: the plan is traced again and again
        while True:
            for x in xs:
                copy.clear_plans()
                _C.variant_keys("exit_probe::copy", (x,), {})

    def compiles():  # C++'s compile callback: Triton through the disk cache, written each time
        while True:
            cache.clear()
            triton_compile._compile_callback(KERNEL, WORDS, 90)

    for work in (cpu_calls, traces, compiles):
        for _ in range(3):
            threading.Thread(target=work, daemon=True).start()
    time.sleep(1.5)
    print("exiting", flush=True)
"""


@pytest.mark.parametrize("run", range(3))
def test_exit_while_threads_trace_and_compile_is_clean(tmp_path, run):
    status, out, err = _run(tmp_path, EXIT_WITH_WORK_IN_FLIGHT)
    assert "exiting" in out
    assert status == 0, f"exit status {status}:\n{err[-3000:]}"
    for sign in ("terminate called", "Fatal Python error", "Exception in thread"):
        assert sign not in err, err[-3000:]
    _assert_only_whole_entries(tmp_path / "cache")


# -- interrupts ----------------------------------------------------------------------------------------------

REPORT = """
    except BaseException as e:  # what the caller sees
        print("raised", type(e).__name__, flush=True)
"""


TRACE = """
    try:
        CALL
        print("returned", flush=True)
"""


@pytest.mark.parametrize("path", ["cpu", "native"])
def test_ctrl_c_during_a_first_trace_is_keyboard_interrupt(tmp_path, path):
    call = "copy(xs[1])" if path == "cpu" else '_C.variant_keys("exit_probe::copy", (xs[1],), {})'
    status, out, err = _run(tmp_path, TRACE.replace("CALL", call) + REPORT, env={"BODY_SLEEP": "60"},
                            interrupt_after="tracing")
    assert "raised KeyboardInterrupt" in out, out + err[-3000:]
    assert status == 0, err[-3000:]
    _assert_only_whole_entries(tmp_path / "cache")


# The compile callback, through the disk cache, reached from C++ (a bundle's precompiled variant: the path a
# GPU's first launch takes too); `stage` says where it waits for the interrupt: in Triton's compile, or in
# the disk cache's write of the entry.
COMPILE = """
    import triton.compiler.compiler as triton_compiler
    stage = sys.argv[1]

    def waiting(original, name):
        def wrapper(*args, **kwargs):
            if stage == name:
                print(name, flush=True)
                time.sleep(60)
            return original(*args, **kwargs)
        return wrapper

    triton.compile = triton_compiler.compile = waiting(triton.compile, "compiling")
    os.replace = waiting(os.replace, "writing")
    try:
        _C.export_bundle(["exit_probe::copy"], [(KERNEL, WORDS, 90)], "test")
        print("returned", flush=True)
"""


@pytest.mark.parametrize("stage", ["compiling", "writing"])
def test_ctrl_c_during_a_compile_is_keyboard_interrupt(tmp_path, stage):
    status, out, err = _run(tmp_path, COMPILE + REPORT, args=(stage,), interrupt_after=stage)
    assert "raised KeyboardInterrupt" in out, out + err[-3000:]
    assert status == 0, err[-3000:]
    _assert_only_whole_entries(tmp_path / "cache")
