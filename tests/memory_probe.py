"""Host memory of one op called on many 1-d sizes in a long-lived process (run as a script by
tests/test_gpu_memory.py): a process that has run other ops (training ops forward and backward, a compiled
function, an in-place op), then calls tile::add once per specialization class, then on SIZES distinct sizes (no
new plan). Prints one JSON line: the resident set's growth over the sizes, and what tells where it went: the Python
heap's largest growths by traceback (tracemalloc), the C heap's (glibc's mallinfo2), torch_tile's runtime counters
and the CUDA caching allocator's segments over the loop."""

import ctypes
import gc
import json
import os
import sys
import tracemalloc

import torch

import torch_tile as tt
import torch_tile.kernels as K


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def c_heap_in_use() -> int:
    """Bytes malloc has handed out and not taken back (glibc), or -1 where mallinfo2 is missing."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return -1
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def other_ops(device) -> None:
    x = torch.randn(64, 256, device=device, requires_grad=True)
    w = torch.randn(256, device=device, requires_grad=True)
    b = torch.randn(256, device=device, requires_grad=True)
    for _ in range(3):
        K.softmax(x).sum().backward()
        K.rms_norm(x, w, 1e-6)[0].sum().backward()
        K.layer_norm(x, w, b, 1e-5)[0].sum().backward()
        K.swiglu(x, x).sum().backward()
        K.matmul(x.detach(), x.detach().t().contiguous())
        K.cross_entropy(x, torch.randint(0, 256, (64,), device=device))[0].sum().backward()
        torch.compile(lambda a: K.add(a, a) * 2)(x.detach())
        y = torch.randn(1000, device=device)
        K.add_(y, y)


def main(sizes: int, device: str = "cuda") -> dict:
    other_ops(device)
    for n in (1, 2, 3, 4, 8, 16, 17, 32, 33, 64, 100, 128, 4096, 4097):  # each specialization class once
        a = torch.randn(n, device=device)
        K.add(a, a)
    base = torch.randn(3 * sizes + 200, device=device)
    for n in range(sizes + 10, sizes + 200):  # warm: the allocator's blocks for these sizes
        K.add(base[:n], base[:n])
    torch.cuda.synchronize()
    gc.collect()
    tracemalloc.start(12)
    before_heap = tracemalloc.take_snapshot()
    before, c_before, counters = rss(), c_heap_in_use(), tt.runtime_counters()
    segments = torch.cuda.memory_stats().get("segment.all.current", 0)
    for n in range(2, sizes + 2):
        K.add(base[:n], base[:n])
    torch.cuda.synchronize()
    gc.collect()
    grown = rss() - before
    c_grown = c_heap_in_use() - c_before
    counters = {k: v - counters[k] for k, v in tt.runtime_counters().items() if v != counters[k]}
    segments = torch.cuda.memory_stats().get("segment.all.current", 0) - segments
    top = tracemalloc.take_snapshot().compare_to(before_heap, "traceback")[:5]
    return {"sizes": sizes, "rss_grown": grown, "c_heap_grown": c_grown, "counters": counters,
            "allocator_segments_grown": segments, "plans": K.add.plan_count,
            "python_heap_top": [{"bytes": s.size_diff, "where": s.traceback.format()[-6:]} for s in top]}


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
