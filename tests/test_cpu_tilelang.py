"""The TileLang frontend without a GPU: what a JITKernel call in a body records (pointers, TMA descriptors over
the call's sizes, symbols from the tensors, the grid from TileLang's thread extents), the call's checks as
TileLang's executor makes them, the fake implementation, and sm_90a cubins that are TileLang's own compile of
the kernel, through a bundle."""

from __future__ import annotations

import re

import pytest
import torch

import torch_tile as tt
from torch_tile import _C
from torch_tile._plan import BindingKind
from torch_tile.bundle import read_bundle

tilelang = pytest.importorskip("tilelang", reason="needs tilelang (pip install torch_tile[tilelang])")

from torch_tile.kernels import matmul_tilelang as mt  # noqa: E402
from torch_tile.frontends.tilelang import kernels as tl_kernels, lowering  # noqa: E402

import tilelang_cases as cases  # noqa: E402

T, N, D, F = BindingKind.TENSOR, BindingKind.INT, BindingKind.TENSORDESC, BindingKind.FLOAT
pytestmark = [pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU tests compile for sm_90a"),
              pytest.mark.skipif(bool(cases.nvcc_missing()), reason=cases.nvcc_missing() or "nvcc found")]


def _plan(op: str, args: tuple):
    keys = _C.variant_keys(op, args, {})
    plans = _C.plans_of(op)
    return plans[-1], keys


def test_a_gemm_records_descriptors_pointers_and_symbols():
    a, b = torch.zeros(300, 64, dtype=torch.float16), torch.zeros(64, 200, dtype=torch.float16)
    plan, keys = _plan("tile::matmul_tilelang", (a, b))
    [launch] = plan.launches
    assert launch.kernel_name == "gemm_kernel"
    # A and B are read through TMA: descriptors; C through its pointer; m, n, k the kernel's symbols.
    assert [b_.kind for b_ in launch.bindings] == [D, D, T, N, N, N]
    assert [str(e.text) for e in launch.grid] == ["((b.size(1) + 127) // 128)", "((a.size(0) + 127) // 128)", "1"]
    # Descriptors: the buffer's global sizes and strides (TileLang's, innermost last here), per call.
    desc = launch.bindings[0].desc
    assert [e.text for e in desc.shape] == ["a.size(0)", "a.size(1)"]
    assert desc.name == "A_desc"
    # The key: the configuration, then a dtype word per tensor binding, nothing specialised per value.
    [(_, words)] = keys
    assert len(words) == 1 + len(launch.bindings)
    # Every plan guard holds for the call that traced it and one plan serves other sizes.
    _C.variant_keys("tile::matmul_tilelang", (torch.zeros(17, 64, dtype=torch.float16),
                                              torch.zeros(64, 8, dtype=torch.float16)), {})
    assert len(_C.plans_of("tile::matmul_tilelang")) == 1


def test_scalars_and_symbols_bind_as_tilelang_binds_them():
    x = torch.zeros(1000)
    plan, _ = _plan("tilelang_test::scale_add", (x, x, 0.5))
    [launch] = plan.launches
    # One binding per parameter of the kernel TileLang generated, in its declaration's order.
    source = cases.scale_add_kernel().get_kernel_source()
    declaration = re.search(r"scale_add_kernel\(([^)]*)\)", source).group(1)
    names = [re.findall(r"\w+", param)[-1] for param in declaration.split(",")]
    assert names == ["Out", "X", "Y", "alpha", "n"]
    assert [b.kind for b in launch.bindings] == [T, T, T, F, N]
    assert launch.bindings[-1].expr.text == "x.size(0)"
    assert launch.grid[0].text == "((x.size(0) + 255) // 256)"


def test_sm90a_cubins_are_tilelangs_own_compile(tmp_path):
    from tilelang.cuda.backend import tilelang_callback_cuda_compile

    path = str(tmp_path / "tilelang.ttb")
    a, b = torch.zeros(256, 64, dtype=torch.float16), torch.zeros(64, 128, dtype=torch.float16)
    tt.export_bundle(["tile::matmul_tilelang"], path, capabilities=[90], examples={"tile::matmul_tilelang": [(a, b)]})
    [variant] = read_bundle(path)["variants"]
    binary = variant["binary"]
    kernel = mt.gemm_kernel()
    # The launch TileLang's lowering describes: 256 threads for threads=128 (a producer warpgroup added by warp
    # specialization), its dynamic shared memory, two tensor maps.
    [dk] = lowering.lowering(kernel).kernels
    assert binary["name"] == "gemm_kernel" and binary["block"] == (256, 1, 1)
    assert binary["shared"] == dk.shared > 0 and binary["tensor_maps"] == 2
    # The cubin is TileLang's compile of the source its JITKernel was built from.
    expected = bytes(tilelang_callback_cuda_compile(kernel.get_kernel_source(), kernel.target, kernel.pass_configs))
    config = tl_kernels.REGISTRY.configs[variant["key"][0]]
    assert tl_kernels.variant_metadata(config, 90)["cubin"] == expected
    assert binary["cubin_bytes"] == len(expected)
    with pytest.raises(RuntimeError, match=r"gemm_kernel was compiled for target sm_90a and cannot run on an sm_100"):
        tl_kernels.variant_metadata(config, 100)


def test_the_call_is_checked_as_tilelang_checks_it():
    x = torch.zeros(128)
    with pytest.raises(tt.CallError, match=r"tilelang_test::scale_add: TileLang kernel scale_add: parameter Y "
                                           r"must be torch.float32, got torch.float16"):
        _C.variant_keys("tilelang_test::scale_add", (x, x.half(), 1.0), {})
    with pytest.raises(tt.CallError, match=r"parameter Y: size\[0\] must be 128 \(`n`\), got 64"):
        _C.variant_keys("tilelang_test::scale_add", (x, x[:64], 1.0), {})
    with pytest.raises(tt.CallError, match=r"parameter X: stride\[0\] must be 1 \(`1`\), got 2"):
        _C.variant_keys("tilelang_test::scale_add", (x[::2], x[:64], 1.0), {})
    with pytest.raises(tt.CallError, match=r"matmul_tilelang: TileLang kernel gemm: parameter A: stride\[0\] must be 8 "
                                           r"\(`k`\), got 1"):
        _C.variant_keys("tile::matmul_tilelang", (torch.zeros(8, 4, dtype=torch.float16).t(),
                                                  torch.zeros(8, 8, dtype=torch.float16)), {})
    with pytest.raises(tt.CallError, match=r"parameter X: size\[1\] must be 64 \(`64`\), got 32"):
        _C.variant_keys("tilelang_test::add_row_index", (torch.zeros(4, 32, dtype=torch.float16),), {})


def test_the_fake_implementation_allocates_the_outputs():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(300, 64, dtype=torch.float16, device="cuda")
        b = torch.empty(64, 200, dtype=torch.float16, device="cuda")
        out = torch.ops.tile.matmul_tilelang(a, b)
    assert out.shape == (300, 200) and out.dtype == torch.float16 and out.device.type == "cuda"


def test_jit_kernel_calls_are_routed_only_while_bodies_run():
    from tilelang.jit.kernel import JITKernel

    original = JITKernel.__call__
    _C.variant_keys("tilelang_test::add_row_index", (torch.zeros(3, 64, dtype=torch.float16),), {})
    assert JITKernel.__call__ is original
    with pytest.raises(NotImplementedError, match="cannot run on CPU tensors"):
        torch.ops.tilelang_test.add_row_index(torch.zeros(3, 64, dtype=torch.float16))


def test_a_jit_factory_called_with_sizes_compiles_a_kernel_per_size():
    # TileLang compiles a factory's kernel per argument tuple: the sizes passed become constants of the plan.
    for shape in ((4, 200), (6, 200), (4, 200)):
        _C.variant_keys("tilelang_test::scale_rows", (torch.zeros(shape),), {})
    plans = _C.plans_of("tilelang_test::scale_rows")
    assert len(plans) == 2
    assert {"x.size(0) == 4", "x.size(1) == 200"} <= {g.text for g in plans[0].guards}
    assert [e.text for e in plans[0].launches[0].grid] == ["4", "2", "1"]
    # The factory's own cache made one kernel per size, as a TileLang user's calls would.
    assert len(cases.scale_rows_factory._kernel_cache) == 2
