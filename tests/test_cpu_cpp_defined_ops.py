"""Ops defined in C++ (torch_tile/op_definition.h), without a GPU: what the
dispatcher sees, the Meta implementation, the plans a C++ body builds, sm_90
cubins compiled by the runtime's own NVRTC path into a bundle, the errors, and
the LibTorch example program that defines ops with no Python in the process.
The ops are csrc/testing/cpp_defined_ops.cpp's, defined through the public API."""

from __future__ import annotations

import os
import subprocess

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_tile as tt
from torch_tile.bundle import read_bundle, verify_bundle
from torch_tile import _C
from torch_tile._plan import BindingKind
from torch_tile import _testing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOFTMAX_CU = os.path.join(ROOT, "torch_tile", "kernels", "softmax.cu")


@pytest.fixture(scope="module", autouse=True)
def defined():
    _testing.define_cpp_test_ops()


def test_the_ops_are_defined_with_their_schemas():
    schema = torch.ops.cpp_test.scale.default._schema
    assert str(schema) == "cpp_test::scale(Tensor x, float alpha) -> (Tensor, Tensor)"
    assert torch._C._dispatch_has_kernel_for_dispatch_key("cpp_test::pick", "CUDA")
    assert torch._C._dispatch_has_kernel_for_dispatch_key("cpp_test::pick", "Meta")


def test_meta_calls_take_their_shapes_from_the_plan():
    x = torch.empty(4, 10, device="meta")
    out, seen = torch.ops.cpp_test.scale(x.half(), 2.0)
    assert out.shape == (4, 10) and out.dtype == torch.float16 and out.is_meta
    assert seen.shape == (1,) and seen.dtype == torch.int32
    picked = torch.ops.cpp_test.pick(x, -1)
    assert picked.shape == (4,) and picked.dtype == torch.float32


def test_fake_tensors_use_the_meta_implementation():
    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.empty(6, 5))
        out = torch.ops.cpp_test.pick(x, 2)
    assert out.shape == (6,)


def test_a_plan_per_case_with_the_body_s_guards():
    x = torch.empty(3, 8, device="meta")
    torch.ops.cpp_test.pick(x, 1)
    torch.ops.cpp_test.pick(x, -2)  # the other side of `holds(k < 0)`: a second plan
    torch.ops.cpp_test.pick(torch.empty(5, 9, device="meta"), 4)  # same case: no new plan
    plans = _C.plans_from_bytes(_C.export_plans("cpp_test::pick"))["plans"]
    assert len(plans) == 2
    texts = [[g.text for g in p.guards] for p in plans]
    assert any("(k < 0)" in t for t in texts[0]) and any("not (k < 0)" in t for t in texts[0] + texts[1])
    launch = plans[0].launches[0]
    assert launch.kernel_name == "pick" and launch.site == "C++ body of cpp_test::pick"
    assert [b.kind for b in launch.bindings] == [BindingKind.TENSOR, BindingKind.TENSOR] + [BindingKind.INT] * 3
    assert plans[0].tensor_guards[0].ndim == 2


def test_selection_tries_the_last_selected_plan_first_unless_plans_may_overlap():
    pick, x = torch.ops.cpp_test.pick, torch.empty(3, 8, device="meta")  # meta calls select plans too

    def scans():
        return tt.runtime_counters()["plan_scans"]

    _C.clear_plans("cpp_test::pick")
    try:
        pick(x, -1)
        pick(x, 1)  # plans `k < 0` and `not (k < 0)`: disjoint
        before = scans()
        for _ in range(5):
            assert pick(x, 1).shape == (3,)
        assert scans() == before  # the last selected plan served every call
        for k in (-1, 1, -1, 1):
            pick(x, k)
        assert scans() == before + 4  # each call changed case
        # The same plans installed again overlap the first two: the first plan that matches, in order.
        assert _C.install_plans("cpp_test::pick", _C.export_plans("cpp_test::pick")) == 2
        before = scans()
        for _ in range(5):
            assert pick(x, 1).shape == (3,)
        assert scans() == before + 5  # plan 0 (`k < 0`) was tried first each time
        for _ in range(5):
            pick(x, -1)
        assert scans() == before + 5
    finally:
        _C.clear_plans("cpp_test::pick")


def test_checks_and_refusals_name_the_op():
    x = torch.empty(4, 6, device="meta")
    with pytest.raises(ValueError, match=r"cpp_test::pick: k must index a column of x \(`"):
        torch.ops.cpp_test.pick(x, 6)
    with pytest.raises(ValueError, match=r"cpp_test::scale: x must be contiguous"):
        torch.ops.cpp_test.scale(x.t(), 1.0)
    with pytest.raises(ValueError, match=r"cpp_test::scale: x must be float32 or float16"):
        torch.ops.cpp_test.scale(x.double(), 1.0)


def test_a_call_needing_a_gradient_is_refused_clearly():
    x = torch.ones(4, 6, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"cpp_test::pick: defined in C\+\+, the op has no backward"):
        torch.ops.cpp_test.pick(x, 1)


def test_the_runtime_compiles_sm90_variants_per_specialization_into_a_bundle(tmp_path):
    path = str(tmp_path / "cpp.ttb")
    aligned = torch.zeros(64)
    unaligned = torch.zeros(65)[1:]  # 4 bytes off: the pointers lose the 16-byte alignment
    tt.export_bundle(["cpp_test::scale"], path, capabilities=[90],
                     examples={"cpp_test::scale": [(aligned, 2.0), (unaligned, 2.0), (aligned.half(), 2.0)]})
    contents = read_bundle(path)
    variants = [v for v in contents["variants"] if v["kernel"] == "scale"]
    keys = {tuple(v["key"]) for v in variants}
    assert len(keys) == 3 and {v["capability"] for v in variants} == {90}  # float: aligned, unaligned; half
    assert verify_bundle(path) == []
    names = {v["binary"]["name"] for v in variants}  # NVRTC's entry points: scale<float> and scale<__half>
    assert len(names) == 2 and all(n.startswith("_Z5scaleI") for n in names) and any("__half" in n for n in names)
    plan = contents["ops"][0]["plans"][0]
    assert [launch.kernel_name for launch in plan.launches] == ["scale"]


def test_a_cutile_specialised_kernel_is_keyed_by_each_tensor_s_layout_bits(tmp_path):
    # Hand-derived from cuTile's rules (float32: a stride is a multiple of 16 bytes when it is one of 4 elements).
    L = _C.key_word.layout
    wide = torch.randn(48, 40)
    cases = [
        (wide, L.BASE_ALIGNED16 | L.DISJOINT | 1 << L.STRIDE_16BYTES_SHIFT | 1 << L.STRIDE_ONE_SHIFT + 1
         | 1 << L.SIZE_DIV16_SHIFT),
        (wide[:1, 1:], L.DISJOINT | 1 << L.STRIDE_16BYTES_SHIFT | 1 << L.STRIDE_ONE_SHIFT + 1 | 1 << L.SIZE_ONE_SHIFT),
        (torch.randn(1, 40).expand(48, 40),  # stride 0: elements shared, and 0 bytes is a multiple of 16
         L.BASE_ALIGNED16 | 1 << L.STRIDE_16BYTES_SHIFT | 1 << L.STRIDE_ONE_SHIFT + 1 | 1 << L.SIZE_DIV16_SHIFT),
    ]
    for x, bits in cases:
        [(_, words)] = _C.variant_keys("cpp_test::layout_bits", (x,), {})
        assert words[2] & ((1 << L.DTYPE_SHIFT) - 1) == bits  # words: config, out, x
    path = str(tmp_path / "layout.ttb")
    tt.export_bundle(["cpp_test::layout_bits"], path, capabilities=[90],
                     examples={"cpp_test::layout_bits": [(x,) for x, _ in cases]})
    keys = {tuple(_C.variant_keys("cpp_test::layout_bits", (x,), {})[0][1]) for x, _ in cases}
    assert len(keys) == 3  # a variant per layout, each compiled with its macros into the bundle
    assert keys <= {tuple(v["key"]) for v in read_bundle(path)["variants"] if v["kernel"] == "layout_bits"}
    assert verify_bundle(path) == []


def test_a_compile_error_carries_the_kernel_and_nvrtc_log(tmp_path):
    with pytest.raises(ValueError, match=r"(?s)NVRTC could not compile kernel broken for sm_90.*not_declared"):
        tt.export_bundle(["cpp_test::broken"], str(tmp_path / "b.ttb"), capabilities=[90],
                         examples={"cpp_test::broken": [(torch.zeros(8),)]})


def test_kernel_parameters_are_declared_per_launch():
    torch.ops.cpp_test.scale(torch.empty(32, device="meta"), 1.0)
    plan = _C.plans_from_bytes(_C.export_plans("cpp_test::scale"))["plans"][0]
    kinds = [b.kind for b in plan.launches[0].bindings]
    assert kinds == [BindingKind.TENSOR, BindingKind.TENSOR, BindingKind.FLOAT, BindingKind.INT, BindingKind.TENSOR]
    assert plan.launches[0].bindings[2].slot == 1  # the float argument alpha, read per call


def test_the_example_program_defines_ops_with_no_python(cpp_examples):
    program = os.path.join(cpp_examples, "tile_define_ops")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([program, SOFTMAX_CU], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    for line in ("ok   no libpython in the process", "ok   softmax on meta tensors: shape and dtype",
                 "ok   check() refuses with the op and the message", "ok   defining an op twice is refused"):
        assert line in out.stdout
    assert "all checks passed" in out.stdout
    linked = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    assert "libpython" not in linked and "libtorch_python" not in linked


def test_empty_tensors_are_contiguous_as_torch_says():
    out, seen = torch.ops.cpp_test.scale(torch.empty(2, 0, device="meta"), 1.0)
    assert out.shape == (2, 0)
    torch.ops.cpp_test.scale(torch.empty(2, 0, 3, device="meta").transpose(0, 2), 1.0)  # any strides: empty


def test_a_body_returning_one_tensor_twice_is_refused():
    with pytest.raises(ValueError, match=r"cpp_test::twice: returns\(\) names out0 twice"):
        torch.ops.cpp_test.twice(torch.empty(3, device="meta"))


@pytest.mark.parametrize("schema, message", [
    ("cpp_test::no_tensor(int n) -> Tensor", "needs a Tensor argument"),
    ("cpp_test::writes(Tensor(a!) x) -> Tensor", "argument 'x' is written"),
    ("cpp_test::listed(Tensor[] x) -> Tensor", "except list[Tensor]"),
    ("cpp_test::pick(Tensor x) -> Tensor", "cpp_test::pick is already defined"),
])
def test_schemas_the_api_cannot_serve_are_refused_before_anything_is_defined(schema, message):
    assert message in _testing.define_cpp_op(schema)
    name = schema.split("(")[0]
    if name != "cpp_test::pick":
        assert _testing.define_cpp_op(schema) == _testing.define_cpp_op(schema)  # nothing half-defined
