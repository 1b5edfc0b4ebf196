"""Ops defined in C++ (torch_tile/op_definition.h) on the GPU: results against
torch, the specialization bits each variant sees, CUDA graphs, torch.compile
through the Meta implementation, the load-time check of declared parameter
widths, and the LibTorch example program's GPU checks."""

from __future__ import annotations

import os
import subprocess

import pytest
import torch

from torch_tile import _testing

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module", autouse=True)
def defined():
    _testing.define_cpp_test_ops()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_scale_matches_torch_and_each_variant_sees_its_own_bits(dtype):
    seen_values = set()
    for n, offset in [(64, 0), (64, 1), (50, 0)]:  # aligned and n % 16 == 0; x unaligned; n % 16 != 0
        x = torch.randn(n + offset, device="cuda", dtype=dtype)[offset:]
        out, seen = torch.ops.cpp_test.scale(x, 1.5)
        torch.testing.assert_close(out, (x.float() * 1.5).to(dtype))
        expected = (out.data_ptr() % 16 == 0) * 1 + (x.data_ptr() % 16 == 0) * 2 + (n % 16 == 0) * 4
        assert seen.item() == expected, (n, offset)
        seen_values.add(expected)
    assert seen_values == {1 | 2 | 4, 1 | 4, 1 | 2}  # three variants, each compiled with its own macros


def test_pick_matches_indexing_on_strided_rows_and_negative_columns():
    wide = torch.randn(300, 40, device="cuda")
    x = wide[:, 5:30]
    for k in (0, 7, 24, -1, -25):
        torch.testing.assert_close(torch.ops.cpp_test.pick(x, k), x[:, k])


@pytest.mark.parametrize("shape", [(40, 24), (16, 16), (1, 100), (333, 17)])
def test_transpose_launches_a_two_dimensional_block(shape):
    x = torch.randn(shape, device="cuda")
    torch.testing.assert_close(torch.ops.cpp_test.transpose(x), x.t().contiguous(), atol=0, rtol=0)


def test_a_cutile_specialised_kernel_runs_the_variant_of_each_layout():
    # bits (csrc/testing/cpp_defined_ops.cpp): 1 aligned, 2 disjoint, 4/8 stride 0/1 a multiple of 16 bytes,
    # 16/32 stride 0/1 is 1, 64/128 size 0/1 divisible by 16, 256/512 size 0/1 is 1; derived by hand per case.
    wide = torch.randn(48, 40, device="cuda")
    cases = [(wide, 1 + 2 + 4 + 32 + 64), (wide[:1, 1:], 2 + 4 + 32 + 256),
             (torch.randn(1, 40, device="cuda").expand(48, 40), 1 + 4 + 32 + 64),
             (torch.randn(32, 16, device="cuda").t(), 1 + 2 + 8 + 16 + 64 + 128)]
    for x, expected in cases:
        assert torch.ops.cpp_test.layout_bits(x).item() == expected, x.stride()


def test_a_cuda_graph_replays_the_op():
    x = torch.randn(1000, 8, device="cuda")
    torch.ops.cpp_test.pick(x, 3)  # warm: plan and variant exist before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = torch.ops.cpp_test.pick(x, 3)
    x.copy_(torch.randn(1000, 8, device="cuda"))
    graph.replay()
    torch.testing.assert_close(out, x[:, 3])


def test_torch_compile_uses_the_meta_implementation():
    def f(x):
        return torch.ops.cpp_test.pick(x * 2, -1) + 1

    compiled = torch.compile(f, fullgraph=True)
    for rows in (16, 40):
        x = torch.randn(rows, 6, device="cuda")
        torch.testing.assert_close(compiled(x), f(x))


def test_a_declared_width_the_kernel_does_not_take_is_refused_at_load():
    # The kernel is named by its entry point (_Z4fillPfx: NVRTC's mangled name).
    with pytest.raises(ValueError, match=r"kernel \w*fill\w*: parameter 1 is declared 8 bytes wide, but the launch "
                                         r"passes 4 bytes there"):
        torch.ops.cpp_test.wrong_width(torch.zeros(8, device="cuda"))
    torch.cuda.synchronize()  # nothing sticky


def test_the_example_program_passes_its_gpu_checks(cpp_examples):
    program = os.path.join(cpp_examples, "tile_define_ops")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([program, os.path.join(ROOT, "torch_tile", "kernels", "softmax.cu")], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "skip GPU checks" not in out.stdout
    assert "ok   softmax matches at::softmax, 5000 columns, Double" in out.stdout
    assert "ok   a call needing a gradient is refused, naming why" in out.stdout
