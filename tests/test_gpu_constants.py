"""Plan constants on the GPU (CPU counterpart: tests/test_cpu_constants.py): a kernel given a module's buffer and an
ATen step given a library's tensor run natively (no fallback), read the tensor's data as it is at each call, trace
again once the owner replaces it, and replay under a CUDA graph and torch.compile."""

import pytest
import torch

import torch_tile as tt
from torch_tile import _C

import constant_ops as C

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(autouse=True)
def _fresh_state():
    for op in (C.lookup, C.scaled):
        _C.clear_plans(op.qualname)
    C.LOOKUP.to("cuda")
    C.LOOKUP.table = torch.arange(64, dtype=torch.float32, device="cuda") * 0.5
    C.SCALES[torch.device("cuda", torch.cuda.current_device())] = torch.full((8,), 3.0, device="cuda")
    yield


def _indices(n=1000):
    return torch.randint(0, 64, (n,), device="cuda")


def test_native_calls_read_the_held_tensor_as_it_is_at_each_call():
    index = _indices()
    fallbacks = tt.runtime_counters()["fallback_calls"]
    torch.testing.assert_close(C.lookup(index), C.LOOKUP.table[index], rtol=0, atol=0)
    traces = tt.runtime_counters()["traces"]
    C.LOOKUP.table.mul_(3)  # in place: the same tensor, new data
    torch.testing.assert_close(C.lookup(index), C.LOOKUP.table[index], rtol=0, atol=0)
    assert tt.runtime_counters()["traces"] == traces  # no new trace
    assert tt.runtime_counters()["fallback_calls"] == fallbacks


def test_a_replaced_tensor_is_traced_again_never_read_stale():
    index = _indices()
    C.lookup(index)
    traces = tt.runtime_counters()["traces"]
    C.LOOKUP.table = torch.arange(64, dtype=torch.float32, device="cuda") - 7  # the old buffer is freed
    torch.testing.assert_close(C.lookup(index), C.LOOKUP.table[index], rtol=0, atol=0)
    assert tt.runtime_counters()["traces"] == traces + 1 and C.lookup.plan_count == 1
    C.LOOKUP.table = torch.arange(128, dtype=torch.float32, device="cuda")  # another size: its sizes were constants
    torch.testing.assert_close(C.lookup(index), C.LOOKUP.table[index], rtol=0, atol=0)


def test_a_held_tensor_as_an_aten_argument():
    x = torch.randn(8, device="cuda")
    for _ in range(2):
        torch.testing.assert_close(C.scaled(x), x * 3 + 1)
    C.SCALES[x.device].fill_(-2.0)
    torch.testing.assert_close(C.scaled(x), x * -2 + 1)


def test_cuda_graph_capture_and_torch_compile():
    index = _indices()
    C.lookup(index)  # traced outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = C.lookup(index)
    C.LOOKUP.table.add_(1)
    graph.replay()
    torch.testing.assert_close(out, C.LOOKUP.table[index], rtol=0, atol=0)
    torch._dynamo.reset()
    compiled = torch.compile(lambda i: C.lookup(i) * 2, fullgraph=True)
    torch.testing.assert_close(compiled(index), C.LOOKUP.table[index] * 2, rtol=0, atol=0)
