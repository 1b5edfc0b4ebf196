"""The cuTile frontend without a GPU: what ct.launch in a body records
(pointer, sizes and strides per array, constants in the configuration), the
signature a key compiles to (cuTile's specialization bits), sm_90 cubins from
cuTile's own compiler through a bundle, and the errors."""

from __future__ import annotations

import pytest
import torch

import torch_tile as tt
from torch_tile import _C
from torch_tile._plan import BindingKind
from torch_tile.bundle import read_bundle

ct = pytest.importorskip("cuda.tile", reason="needs cuda-tile (pip install torch_tile[cutile])")

from torch_tile.frontends.cutile import kernels as cutile_kernels  # noqa: E402
from torch_tile.kernels import softmax_cutile  # noqa: E402


@ct.kernel
def _pair(x, y, out, n, alpha, TILE: ct.Constant[int]):
    pid = ct.bid(0)
    ct.store(out, index=(pid,), tile=ct.load(x, index=(pid,), shape=(TILE,)) * alpha)


@tt.op("cutile_test::pair")
def pair(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(0, (x.shape[0] // 64,), _pair, (x, y, out, x.shape[0], alpha, 64))
    return out


@ct.kernel
def _tupled(xs, TILE: ct.Constant[int]):
    pass


@tt.op("cutile_test::tupled")
def tupled(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ct.launch(0, (1,), _tupled, ((x, out), 16))
    return out


def test_a_launch_records_arrays_scalars_and_constants():
    x, y = torch.zeros(128), torch.zeros(4, 4)
    _C.variant_keys("cutile_test::pair", (x, y, 0.5), {})
    plan = _C.plans_of("cutile_test::pair")[0]
    launch = plan.launches[0]
    kinds = [b.kind for b in launch.bindings]
    # x (1-D): pointer, size, stride; y (2-D): pointer, 2 sizes, 2 strides; out as x; n; alpha. TILE: a constant.
    T, N, F = BindingKind.TENSOR, BindingKind.INT, BindingKind.FLOAT
    assert kinds == [T, N, N, T, N, N, N, N, T, N, N, N, F]
    with open(__file__) as f:
        line = next(i for i, text in enumerate(f, 1) if "ct.launch(0, (x.shape[0]" in text)
    assert launch.kernel_name == "_pair" and launch.site == f"{__file__}:{line}"
    config = cutile_kernels.REGISTRY.configs[launch.config]
    assert config.params[-1] == cutile_kernels.ConstantParam(64)
    assert config.params[:2] == (cutile_kernels.ArrayParam(1, index64=False), cutile_kernels.ArrayParam(2, False))


def test_a_key_becomes_cutile_s_specialization_bits():
    W = _C.key_word
    config = cutile_kernels.CutileLaunchConfig(softmax_cutile.softmax_rows, (
        cutile_kernels.ArrayParam(2, False), cutile_kernels.ArrayParam(2, False), cutile_kernels.ConstantParam(128)))
    f32, f16 = _C.packed_dtype(torch.float32), _C.packed_dtype(torch.float16)

    def word(cls, wide=False):
        return (W.INT64 if wide else W.INT32) << 2 | cls

    words = [0, f32 << 2 | W.ALIGNED16, word(W.VALUE_DIV16), word(W.VALUE_OTHER), word(W.VALUE_DIV16),
             word(W.VALUE_ONE), f16 << 2 | W.UNALIGNED, word(W.VALUE_OTHER), word(W.VALUE_DIV16, wide=True),
             word(W.VALUE_DIV16), word(W.VALUE_OTHER)]
    (x, out, tile), types = cutile_kernels.signature(config, words)
    assert x.base_addr_divisible_by == 16 and x.shape_divisible_by == (16, 1)
    assert x.stride_constant == (None, 1) and x.stride_divisible_by == (4, 1)  # 16 bytes: 4 float32 elements
    assert out.base_addr_divisible_by == 1 and out.stride_divisible_by == (8, 1)  # 8 float16 elements
    assert out.index_dtype == ct.int64 and x.index_dtype == ct.int32  # a size beyond int32 widens its array
    assert tile.value == 128
    assert types == ["*i8"] + ["i32"] * 4 + ["*i8"] + ["i64"] * 4


def test_cutile_compiles_sm90_variants_into_a_bundle(tmp_path):
    path = str(tmp_path / "cutile.ttb")
    x = torch.randn(8, 1000)
    tt.export_bundle(["tile::softmax_cutile"], path, capabilities=[90],
                     examples={"tile::softmax_cutile": [(x,), (x.half(),)]})
    variants = read_bundle(path)["variants"]
    names = sorted(v["binary"]["name"] for v in variants)
    # cuTile's mangled names: the dtypes, the stride-1 column (t1) and the constant tile width (I1024).
    assert len(names) == 2 and all(n.startswith("softmax_rows_Kt1_A2f") and n.endswith("_I1024") for n in names)
    assert {v["binary"]["num_warps"] for v in variants} == {4}  # the cubin's required 128 threads


def test_errors_name_the_kernel_and_argument():
    with pytest.raises(tt.TraceError, match=r"argument 'xs' of cuTile kernel _tupled: tuple and list parameters"):
        _C.variant_keys("cutile_test::tupled", (torch.zeros(16),), {})
    with pytest.raises(NotImplementedError, match="cannot run on CPU tensors"):
        torch.ops.tile.softmax_cutile(torch.randn(4, 8))  # the CPU path interprets Triton kernels only


def test_ct_launch_is_routed_only_while_bodies_run():
    original = ct.launch
    _C.variant_keys("tile::softmax_cutile", (torch.randn(3, 40),), {})
    assert ct.launch is original


def test_a_broadcast_input_is_declared_overlapping_in_its_own_plan():
    before = len(_C.plans_of("cutile_test::pair"))
    row = torch.zeros(1, 4).expand(3, 4)  # stride 0 on a dimension of 3
    _C.variant_keys("cutile_test::pair", (torch.zeros(128), row, 0.5), {})
    plans = _C.plans_of("cutile_test::pair")
    assert len(plans) == before + 1
    config = cutile_kernels.REGISTRY.configs[plans[-1].launches[0].config]
    assert config.params[1] == cutile_kernels.ArrayParam(2, False, overlapping=True)
    assert config.params[0].overlapping is False


def test_kernels_that_differ_only_in_what_they_read_are_different_kernels():
    def make(scale):
        @ct.kernel
        def scaled(x, out, TILE: ct.Constant[int]):
            pid = ct.bid(0)
            ct.store(out, index=(pid,), tile=ct.load(x, index=(pid,), shape=(TILE,)) * scale)
        return scaled

    a, b = make(2.0), make(3.0)
    assert cutile_kernels.kernel_id(a) != cutile_kernels.kernel_id(b)
    assert cutile_kernels.kernel_id(a) == cutile_kernels.kernel_id(make(2.0))
