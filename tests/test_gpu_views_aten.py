"""Views and ATen steps replayed natively on the GPU (CPU counterpart:
tests/test_cpu_views_aten.py): results against torch references, plans that
carry views with no ATen call, plan selection by optional/str/dtype
arguments and by alignment, CUDA-graph capture, and plans loaded from bytes."""

from __future__ import annotations

import pytest
import torch

from torch_tile import _C
from torch_tile._plan import StepKind

import views_aten_ops as V

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _args(name):
    x = torch.randn(3, 5, 7, device="cuda")
    if name == "flat_axpy":
        return (x, torch.randn(3, 5, 7, device="cuda", dtype=torch.float16), 0.5)
    if name == "transposed_rows":
        return (torch.randn(6, 9, device="cuda"),)
    return (x,)


@pytest.mark.parametrize("name", sorted(V.CASES))
def test_native_result_matches_torch(name):
    op, reference = V.CASES[name]
    args = _args(name)
    for _ in range(3):  # the trace, then the native plan
        torch.testing.assert_close(op(*args), reference(*args))


def test_views_cost_no_aten_call_and_contiguous_input_costs_no_copy():
    x = torch.randn(4, 6, 10, device="cuda")
    plan = V.rows_double.trace(x)
    assert plan.aten_steps == [] and len(plan.views) == 2
    assert [s.kind for s in plan.order] == [StepKind.VIEW, StepKind.ALLOC, StepKind.LAUNCH, StepKind.VIEW]
    # The same body on a non-viewable input fails in torch too; a strided but viewable one copies nothing.
    strided = torch.randn(4, 6, 20, device="cuda")[:, :, :10]
    torch.testing.assert_close(V.rows_double(strided), V.rows_double_reference(strided))


def test_flat_axpy_contiguous_is_a_guard_and_a_strided_input_a_copy():
    x, y = torch.randn(8, 16, device="cuda"), torch.randn(8, 16, device="cuda")
    dense = V.flat_axpy.trace(x, y, 2.0)
    assert [a.name for a in dense.aten_steps] == []  # contiguous and float32 already: guards only
    xs = torch.randn(16, 8, device="cuda").t()
    strided = V.flat_axpy.trace(xs, y, 2.0)
    assert [a.name for a in strided.aten_steps] == ["aten::clone"]
    torch.testing.assert_close(V.flat_axpy(xs, y, 2.0), V.flat_axpy_reference(xs, y, 2.0))
    torch.testing.assert_close(V.flat_axpy(x, y, 2.0), V.flat_axpy_reference(x, y, 2.0))


def test_optional_str_dtype_and_keyword_arguments_select_plans():
    x, b = torch.randn(4, 8, device="cuda"), torch.randn(4, 8, device="cuda")
    calls = [((x,), {}), ((x, b), {}), ((x, b, "shift"), {}), ((x, None, "scale", torch.float16), {"scale": 3.0}),
             ((x, b, "shift", torch.bfloat16), {"scale": -1.0})]
    for args, kwargs in calls * 2:
        out = V.epilogue(*args, **kwargs)
        ref = V.epilogue_reference(*args, **kwargs)
        assert out.dtype == ref.dtype
        torch.testing.assert_close(out, ref)


def test_in_place_aten_steps_on_a_view_of_an_argument():
    x = torch.randn(5, 6, device="cuda")
    out, expected = torch.randn(5, 6, device="cuda"), None
    expected = out.clone()
    V.zero_then_fill_reference(x, expected)
    V.zero_then_fill(x, out)
    torch.testing.assert_close(out, expected)


def test_alignment_of_an_argument_selects_the_plan():
    base = torch.randn(64, device="cuda")
    torch.testing.assert_close(V.aligned(base[:32]), base[:32])
    torch.testing.assert_close(V.aligned(base[1:33]), base[1:33] * 3.0)  # 4 bytes off: the other branch
    torch.testing.assert_close(V.aligned(base[4:36]), base[4:36])  # 16 bytes off: aligned again


def test_cuda_graph_replays_views_and_aten_steps():
    x = torch.randn(16, 8, device="cuda").t()  # strided: the plan copies it
    y = torch.randn(8, 16, device="cuda")
    V.flat_axpy(x, y, 2.0)  # trace and compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = V.flat_axpy(x, y, 2.0)
    x.copy_(torch.randn(16, 8, device="cuda").t())
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, V.flat_axpy_reference(x, y, 2.0))


def test_plans_with_views_and_aten_steps_round_trip_through_bytes():
    x, y = torch.randn(16, 8, device="cuda").t(), torch.randn(8, 16, device="cuda")
    expected = V.flat_axpy(x, y, 0.25)
    data = V.flat_axpy.export_plans()
    V.flat_axpy.clear_plans()
    assert V.flat_axpy.load_plans(data) >= 1
    traces = _C.counters()["traces"]
    torch.testing.assert_close(V.flat_axpy(x, y, 0.25), expected)
    assert _C.counters()["traces"] == traces  # served by the loaded plan


def test_torch_compile_and_opcheck():
    for name, (op, reference) in sorted(V.CASES.items()):
        args = _args(name)
        compiled = torch.compile(lambda *a, op=op: op(*a), fullgraph=True, dynamic=True)
        torch.testing.assert_close(compiled(*args), reference(*args))
        torch.library.opcheck(op.overload, args)


def test_list_int_argument():
    x = torch.randn(4, 6, device="cuda")
    for shape in ([24], [3, 8], [2, 3, 4], [8, 3]):
        torch.testing.assert_close(V.reshaped_scale(x, shape, 2.0), V.reshaped_scale_reference(x, shape, 2.0))


def test_device_context_in_a_body():
    for device in range(torch.cuda.device_count()):
        x = torch.randn(1000, device=f"cuda:{device}")
        torch.testing.assert_close(V.in_device_context(x), 3 * x)


def test_index_tensors_built_on_the_host_run_natively_and_the_plan_serves_other_sequence_lengths():
    x = torch.randn(200, device="cuda")
    fallbacks = _C.runtime_counters()["fallback_calls"]
    for cu in ([0, 5, 40], [0, 33, 200], [0, 1, 17, 90, 200]):  # 1 + 3, 3 + 11, 1 + 2 + 5 + 7 chunks
        cu_seqlens = torch.tensor(cu, device="cuda")
        for _ in range(2):  # the trace, then the native plan
            out = V.chunk_sums(x, cu_seqlens, 16)
            torch.testing.assert_close(out, V.chunk_sums_reference(x, cu_seqlens, 16))
            torch.testing.assert_close(out, V.chunk_sums.fn(x, cu_seqlens, 16), rtol=0, atol=0)  # the body, eager
    assert _C.runtime_counters()["fallback_calls"] == fallbacks
    assert V.chunk_sums.plan_count == 2  # one per number of sequences


def test_a_host_tensor_given_to_a_kernel_runs_the_body_which_fails_as_eager_does():
    with pytest.warns(RuntimeWarning, match="a tensor the body made on the host"), \
            pytest.raises(ValueError, match="cpu"):
        V.launches_a_host_tensor(torch.randn(300, device="cuda"))
