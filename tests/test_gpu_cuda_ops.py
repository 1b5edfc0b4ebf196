"""Tile ops launching CUDA C++ kernels on the H200 (CPU counterpart: tests/test_cpu_cuda_ops.py): results
against torch for a templated kernel (float32, float16, sizes that do not fill a block), an extern "C"
kernel with dynamic shared memory and a kernel of 3-D blocks; steady-state calls neither trace nor
compile; the launch replays in a CUDA graph."""

from __future__ import annotations

import pytest
import torch

import torch_tile as tt

import cuda_source_ops as ops

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("n", [1, 127, 128, 1000, 4099])
def test_a_templated_kernel_matches_torch(dtype, n):
    x = torch.randn(n, device="cuda", dtype=dtype)
    torch.testing.assert_close(ops.scale(x, 0.5), (x.float() * 0.5).to(dtype))


@pytest.mark.parametrize("shape", [(1, 1), (37, 1000), (5, 4096)])
def test_a_kernel_with_dynamic_shared_memory_matches_torch(shape):
    x = torch.randn(*shape, device="cuda")
    torch.testing.assert_close(ops.row_sum(x), x.sum(-1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape", [(5, 9, 20), (4, 8, 8), (1, 1, 1), (7, 33, 65)])
def test_a_three_dimensional_block_matches_torch(shape):
    x = torch.randn(shape, device="cuda")
    torch.testing.assert_close(ops.volume_scale(x, 1.5), x * 1.5, atol=0, rtol=0)


def test_steady_state_calls_neither_trace_nor_compile():
    x = torch.randn(3000, device="cuda")
    ops.scale(x, 2.0)
    before = tt.runtime_counters()
    for n in (3000, 2000, 777):
        y = torch.randn(n, device="cuda")
        torch.testing.assert_close(ops.scale(y, 2.0), y * 2.0)
    after = tt.runtime_counters()
    assert (after["traces"], after["compiles"]) == (before["traces"], before["compiles"])


def test_the_launch_replays_in_a_cuda_graph():
    x = torch.randn(1000, device="cuda")
    ops.scale(x, 3.0)  # traced and compiled before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = ops.scale(x, 3.0)
    x.copy_(torch.randn(1000, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 3.0)


@pytest.mark.parametrize("start, n, expected", [
    (0, 32, 4 + 2),  # n % 16 == 0, x aligned
    (0, 33, 2),      # x aligned only
    (1, 16, 4),      # x 4 bytes past an aligned address
    (0, 1, 2 + 1),   # n == 1, x aligned
])
def test_each_variant_of_a_specialised_kernel_runs_with_its_own_bits(start, n, expected):
    x = torch.randn(64, device="cuda")[start:start + n]
    out = ops.facts(x)
    assert out.tolist() == [expected] * n


def test_each_variant_of_a_cutile_specialised_kernel_runs_with_its_tensor_s_layout_bits():
    wide = torch.randn(48, 40, device="cuda")
    cases = [(wide, 32 + 16 + 8 + 4 + 1), (wide[:1, 1:], 32 + 16 + 8 + 2),
             (torch.randn(1, 40, device="cuda").expand(48, 40), 16 + 8 + 4 + 1)]
    for x, expected in cases:  # see tests/cuda_source_ops.py's LAYOUT_SOURCE
        assert ops.layout_facts(x).tolist() == [expected] * x.numel()


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-6), (torch.float16, 1e-3), (torch.bfloat16, 8e-3),
                                        (torch.float64, 1e-12)])
@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (64, 1000), (3, 4097)])
def test_the_cuda_softmax_matches_torch_and_the_triton_one(dtype, tol, shape):
    from torch_tile import kernels as K

    x = torch.randn(*shape, device="cuda", dtype=dtype) * 4
    got = K.softmax_cuda(x)
    torch.testing.assert_close(got.double(), torch.softmax(x.double(), -1), atol=tol, rtol=tol)
    torch.testing.assert_close(got, K.softmax(x), atol=tol, rtol=tol)


def test_the_cuda_softmax_takes_row_strides_and_empty_rows():
    from torch_tile import kernels as K

    base = torch.randn(8, 300, device="cuda")
    x = base[:, :200]  # rows 300 apart
    torch.testing.assert_close(K.softmax_cuda(x), torch.softmax(x, -1))
    assert K.softmax_cuda(torch.empty(4, 0, device="cuda")).shape == (4, 0)
