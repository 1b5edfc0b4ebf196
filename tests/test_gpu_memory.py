"""GPU test: host memory stays bounded in a long-lived process that calls one op on many sizes after running other
ops (tests/memory_probe.py, in a process of its own so that its resident set is its own). CPU counterpart (dry runs,
the CPU path's traces): tests/test_cpu_hardening_memory.py."""

import json
import os
import subprocess
import sys

from conftest import requires_cuda

pytestmark = requires_cuda

SIZES = 4000
RSS_BYTES_PER_SIZE = 1024  # the bound on the process's growth per size, once warm


def test_a_busy_process_calling_one_op_on_many_sizes_keeps_no_memory_per_size(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "TORCH_TILE_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, os.path.join(here, "memory_probe.py"), str(SIZES)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{probe['rss_grown'] / 2**20:.2f} MB over {SIZES} sizes; {json.dumps(probe)}")
    assert probe["plans"] == 1  # every size shares the plan
    assert probe["rss_grown"] < RSS_BYTES_PER_SIZE * SIZES, \
        f"{probe['rss_grown'] / SIZES:.0f} bytes per size; the C heap grew by {probe['c_heap_grown']} bytes, " \
        f"runtime counters by {probe['counters']}, the allocator's segments by " \
        f"{probe['allocator_segments_grown']}; the Python heap's largest growths: {probe['python_heap_top']}"
