"""list[Tensor] arguments and returns run natively on the GPU (CPU
counterpart: tests/test_cpu_tensor_lists.py): results against torch
references, one plan per list length, the fast Python entry (lists and tuples)
against torch's own entry, a LibTorch-style dispatcher call, CUDA-graph
capture, plans loaded from bytes, and the argument checks in C++."""

from __future__ import annotations

import pytest
import torch

from torch_tile import _C

import tensor_list_ops as L

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _close(got, expected):
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e)
    else:
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("name", sorted(L.CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_native_result_matches_torch(name, dtype):
    op, reference = L.CASES[name]
    args = L.case_args(name, "cuda", dtype)
    for _ in range(3):  # the trace, then the native plan
        _close(op(*args), reference(*args))


def test_one_plan_per_list_length_and_the_native_path_serves_repeats():
    L.scale_each.clear_plans()
    xs = [torch.randn(n, device="cuda") for n in (5, 70, 300)]
    for k in (1, 2, 3, 2, 1, 3):
        _close(L.scale_each(xs[:k], 1.5), L.scale_each_reference(xs[:k], 1.5))
    assert L.scale_each.plan_count == 3
    before = _C.counters()["traces"]
    for k in (1, 2, 3):
        L.scale_each([torch.randn(n + 1, device="cuda") for n in (5, 70, 300)][:k], 2.0)
    assert _C.counters()["traces"] == before  # other sizes, same lengths: no new trace


def test_list_return_from_the_fast_entry_and_from_torchs_entry():
    x = torch.randn(6, 9, device="cuda")
    expected = L.split_scale_reference(x, 4)
    _close(L.split_scale(x, 4), expected)  # positional: the fast entry
    _close(L.split_scale(x, parts=4), expected)  # a keyword: torch's own entry
    _close(L.split_scale(x, 0), [])


def test_tuples_and_lists_are_both_lists_of_tensors():
    xs, alpha = L.case_args("sum_all", "cuda")
    _close(L.sum_all(tuple(xs), alpha), L.sum_all_reference(xs, alpha))
    _close(L.sum_all(xs, scale=alpha), L.sum_all_reference(xs, alpha))


def test_called_through_the_dispatcher_as_a_cpp_caller_does():
    xs, alpha = L.case_args("cat_flat", "cuda")
    handle = torch._C._dispatch_find_schema_or_throw(f"{L.NS}::cat_flat", "")
    got = torch._C._dispatch_call_boxed(handle, xs, alpha)
    _close(got, L.cat_flat_reference(xs, alpha))


def test_cuda_graph_capture_of_a_plan_with_lists():
    xs, alpha = L.case_args("stack_scale", "cuda")
    expected = L.stack_scale_reference(xs, alpha)
    L.stack_scale(xs, alpha)  # traced and compiled outside the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        L.stack_scale(xs, alpha)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = L.stack_scale(xs, alpha)
    for x in xs:
        x.mul_(2.0)
    graph.replay()
    torch.cuda.synchronize()
    _close(out, L.stack_scale_reference(xs, alpha))
    assert not torch.allclose(out, expected)


def test_plans_loaded_from_bytes_serve_calls_without_tracing():
    xs, alpha = L.case_args("cat_flat", "cuda")
    data = L.cat_flat.export_plans([L.cat_flat.trace(xs, alpha)])
    L.cat_flat.clear_plans()
    assert L.cat_flat.load_plans(data) == 1
    before = _C.counters()["traces"]
    _close(L.cat_flat(xs, alpha), L.cat_flat_reference(xs, alpha))
    assert _C.counters()["traces"] == before


def test_items_are_checked_in_cpp():
    x = torch.randn(4, device="cuda")
    with pytest.raises(ValueError, match=r"argument 'xs\[1\]' expected a CUDA tensor"):
        L.scale_each([x, torch.randn(4)], 1.0)
    with pytest.raises(TypeError, match=r"argument 'xs\[1\]' expected a dtype a launch plan can hold, got "
                                        r"torch.float8_e8m0fnu"):
        L.scale_each([x, torch.empty(4, device="cuda", dtype=torch.float8_e8m0fnu)], 1.0)


def test_a_written_argument_overlapping_a_list_item_is_refused_in_cpp():
    buf = torch.randn(10, device="cuda")
    with pytest.raises(ValueError, match=r"argument 'out' is written and partially overlaps argument 'xs'\[0\]"):
        L.scale_into(buf[2:8], [buf[:6]], 2.0)
    out = torch.empty(6, device="cuda")
    L.scale_into(out, [buf[:6]], 2.0)
    torch.testing.assert_close(out, buf[:6] * 2.0)
