"""The cuTile frontend without a GPU: what ct.launch in a body records
(pointer, sizes and strides per array, constants in the configuration), the
signature the runtime's key for a call compiles to (cuTile's specialization
bits), sm_90 cubins from cuTile's own compiler through a bundle, and the
errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

import torch_tile as tt
from torch_tile import _C
from torch_tile._plan import BindingKind
from torch_tile.bundle import read_bundle

ct = pytest.importorskip("cuda.tile", reason="needs cuda-tile (pip install torch_tile[cutile])")

from torch_tile.frontends.cutile import kernels as cutile_kernels  # noqa: E402
from torch_tile.kernels import softmax_cutile  # noqa: E402,F401  (registers tile::softmax_cutile)

import cutile_cases  # noqa: E402


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
    # Arrays: cuTile's layout bits in the pointer's word; sizes and strides unspecialised (their bits are there).
    assert [b.specialize_layout for b in launch.bindings if b.kind == T] == [True] * 3
    assert not any(b.specialize for b in launch.bindings[:12] if b.kind == N)
    with open(__file__) as f:
        line = next(i for i, text in enumerate(f, 1) if "ct.launch(0, (x.shape[0]" in text)
    assert launch.kernel_name == "_pair" and launch.site == f"{__file__}:{line}"
    config = cutile_kernels.REGISTRY.configs[launch.config]
    assert config.params[-1] == cutile_kernels.ConstantParam(64)
    assert config.params[:2] == (cutile_kernels.ArrayParam(1, index64=False), cutile_kernels.ArrayParam(2, False))


def _signature(op: str, args: tuple):
    """cuTile's KernelSignature for the one launch a call of ``op`` makes, from the key the runtime computes."""
    [(_, words)] = _C.variant_keys(op, args, {})
    return cutile_kernels.signature(cutile_kernels.REGISTRY.configs[words[0]], words)[0]


def _constraints(op: str, args: tuple) -> list:
    return list(_signature(op, args).parameters)


def test_a_key_carries_cutile_s_array_bits_as_its_launcher_computes_them():
    # Expected values worked out by hand from cuTile's rule (its launcher's compute_array_specialization_bits):
    # per dimension, stride * element bytes % 16 == 0 gives stride_divisible_by = 16 bytes in elements, stride == 1
    # a constant stride, size % 16 == 0 shape_divisible_by 16; a 16-byte aligned base; disjoint elements.
    x, out, tile = _constraints("tile::softmax_cutile", (torch.randn(33, 1000),))
    assert x.stride_divisible_by == (4, 1) and x.stride_constant == (None, 1)  # 4000 bytes; 4 bytes
    assert x.shape_divisible_by == (1, 1) and x.base_addr_divisible_by == 16 and not x.may_alias_internally
    assert x.index_dtype == ct.int32 and tile.value == 1024
    assert out == x  # allocated dense, like x

    x, _, _ = _constraints("tile::softmax_cutile", (torch.randn(64, 1024).half(),))
    assert x.stride_divisible_by == (8, 1) and x.shape_divisible_by == (16, 16)  # 2048 bytes = 8 halves

    wide = torch.randn(300, 40)
    x, out, _ = _constraints("tile::softmax_cutile", (wide[:, 1:26],))  # rows of 160 bytes, starting 4 bytes in
    assert x.stride_divisible_by == (4, 1) and x.base_addr_divisible_by == 1 and not x.may_alias_internally
    assert out.stride_divisible_by == (1, 1)  # the dense output's rows: 100 bytes


def test_keys_compile_to_the_signatures_cutile_s_own_launcher_builds(tmp_path):
    """For every GPU test case, the signature torch_tile compiles (constraints and calling convention) equals
    the one cuTile's own ct.launch asks for with the same arguments (its launcher's code, run against
    tests/libcuda_stub.c: no GPU needed)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler for the libcuda stub")
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"),
                    os.path.join(here, "libcuda_stub.c")], check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), PYTHONPATH=os.pathsep.join([os.path.dirname(here), here]))
    probe = subprocess.run([sys.executable, os.path.join(here, "cutile_launcher_probe.py")], env=env,
                           capture_output=True, text=True, check=True)
    theirs = [json.loads(line) for line in probe.stdout.splitlines()]
    ours = [repr(_signature("tile::softmax_cutile", (x,))) for x in cutile_cases.inputs("cpu")]
    assert len(theirs) == len(ours) == len(cutile_cases.inputs("cpu"))
    for x, mine, cutile in zip(cutile_cases.inputs("cpu"), ours, theirs):
        assert mine == cutile, (tuple(x.shape), x.stride(), x.dtype)


def test_a_broadcast_input_is_declared_overlapping():
    row = torch.zeros(1, 4).expand(3, 4)  # stride 0 on a dimension of 3: elements share memory
    x, y, out, *_ = _constraints("cutile_test::pair", (torch.zeros(128), row, 0.5))
    assert y.may_alias_internally and not x.may_alias_internally and not out.may_alias_internally
    assert y.stride_divisible_by == (4, 1)  # a stride of 0 bytes is divisible by 16, as cuTile counts it
    plans = len(_C.plans_of("cutile_test::pair"))
    _, y, _, *_ = _constraints("cutile_test::pair", (torch.zeros(128), torch.zeros(3, 4), 0.5))
    assert not y.may_alias_internally
    assert len(_C.plans_of("cutile_test::pair")) == plans  # the layout is in the key, not a plan guard


def test_layouts_whose_products_leave_int64_are_keyed_without_overflow():
    # Sizes and strides near 2^62: the bits are computed without forming size x element bits or stride x size.
    x, y, *_ = _constraints("cutile_test::pair", (torch.zeros(128), torch.zeros(1, 1).expand(2**62, 1), 0.5))
    assert y.index_dtype == ct.int64 and y.shape_divisible_by == (16, 1) and y.may_alias_internally
    far = torch.empty_strided((0, 2), (2**62, 1))  # no elements: any stride is allowed
    _, y, *_ = _constraints("cutile_test::pair", (torch.zeros(128), far, 0.5))
    assert y.stride_divisible_by == (4, 1) and not y.may_alias_internally


def test_a_size_beyond_int32_widens_its_array():
    huge = torch.zeros(1, 1).expand(2**31 + 16, 4)  # no memory behind it: only the key is computed
    x, y, *_ = _constraints("cutile_test::pair", (torch.zeros(128), huge, 0.5))
    assert y.index_dtype == ct.int64 and y.shape_divisible_by == (16, 1) and y.may_alias_internally
    assert x.index_dtype == ct.int32


def test_cutile_compiles_sm90_variants_into_a_bundle(tmp_path):
    path = str(tmp_path / "cutile.ttb")
    x = torch.randn(8, 1000)
    tt.export_bundle(["tile::softmax_cutile"], path, capabilities=[90],
                     examples={"tile::softmax_cutile": [(x,), (x.half(),)]})
    variants = read_bundle(path)["variants"]
    names = sorted(v["binary"]["name"] for v in variants)
    # cuTile's mangled names: calling convention v1 (Kt1), the dtypes, the stride-1 column (t1), the tile width.
    assert len(names) == 2 and all(n.startswith("softmax_rows_Kt1_A2f") and n.endswith("_I1024") for n in names)
    # The block is cuTile's compiler's choice (the cubin's required threads: 128 or 256 for these rows).
    assert {v["binary"]["block"] for v in variants} <= {(128, 1, 1), (256, 1, 1)}


def test_errors_name_the_kernel_and_argument():
    with pytest.raises(tt.TraceError, match=r"argument 'xs' of cuTile kernel _tupled: tuple and list parameters"):
        _C.variant_keys("cutile_test::tupled", (torch.zeros(16),), {})
    with pytest.raises(NotImplementedError, match="cannot run on CPU tensors"):
        torch.ops.tile.softmax_cutile(torch.randn(4, 8))  # the CPU path interprets Triton kernels only


def test_ct_launch_is_routed_only_while_bodies_run():
    original = ct.launch
    _C.variant_keys("tile::softmax_cutile", (torch.randn(3, 40),), {})
    assert ct.launch is original


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
