"""Views, ATen steps and the newer argument types on the CPU: what the tracer
records (checked against torch's own metadata), the CPU path's results
against torch references, the fake implementation under torch.compile with
dynamic shapes, opcheck, and plans through bytes. GPU counterpart:
tests/test_gpu_views_aten.py."""

from __future__ import annotations

import math

import pytest
import torch

import torch_tile as tt
from torch_tile import _C
from torch_tile._plan import StepKind

import views_aten_ops as V


def _args(name):
    x = torch.randn(3, 5, 7)
    if name == "flat_axpy":
        return (x, torch.randn(3, 5, 7), 0.5)
    if name == "transposed_rows":
        return (torch.randn(6, 9),)
    return (x,)


@pytest.mark.parametrize("name", sorted(V.CASES))
def test_cpu_path_matches_torch(name):
    op, reference = V.CASES[name]
    args = _args(name)
    torch.testing.assert_close(op(*args), reference(*args))


@pytest.mark.parametrize("name", sorted(V.CASES))
def test_compiled_with_dynamic_shapes_and_opcheck(name):
    op, reference = V.CASES[name]
    args = _args(name)
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: op(*a), fullgraph=True, dynamic=True)
    torch.testing.assert_close(compiled(*args), reference(*args))
    torch.library.opcheck(op.overload, args)


def test_view_steps_carry_torch_metadata_as_expressions():
    x = torch.randn(4, 6, 10)
    plan = V.rows_double.trace(x)
    assert [s.kind for s in plan.order] == [StepKind.VIEW, StepKind.ALLOC, StepKind.LAUNCH, StepKind.VIEW]
    assert plan.aten_steps == []
    # Evaluated for another shape, the view expressions give what torch's view gives.
    from torch_tile.trace.expr import evaluate
    other = torch.randn(2, 3, 9)
    folded = other.view(-1, 9)
    first = plan.views[0]
    sizes = [evaluate(e.code, [other], [other]) for e in first.sizes]
    strides = [evaluate(e.code, [other], [other]) for e in first.strides]
    assert sizes == list(folded.shape) and strides == list(folded.stride())
    assert plan.outputs == [3]  # slots: x, its view, the allocation, the allocation's view


def test_contiguous_of_a_contiguous_input_is_guards_only_and_of_a_strided_one_a_copy():
    y = torch.randn(8, 16)
    dense = V.flat_axpy.trace(torch.randn(8, 16), y, 2.0)
    assert dense.aten_steps == []
    assert any("x.stride(1) == 1" in g.text for g in dense.guards)
    strided = V.flat_axpy.trace(torch.randn(16, 8).t(), y, 2.0)
    assert [a.name for a in strided.aten_steps] == ["aten::clone"]


def test_optional_str_dtype_and_keyword_arguments():
    x, b = torch.randn(4, 8), torch.randn(4, 8)
    for args, kwargs in [((x,), {}), ((x, b), {}), ((x, b, "shift"), {}),
                         ((x, None, "scale", torch.float16), {"scale": 3.0})]:
        out = V.epilogue(*args, **kwargs)
        ref = V.epilogue_reference(*args, **kwargs)
        assert out.dtype == ref.dtype
        torch.testing.assert_close(out, ref)
    plain = V.epilogue.trace(x, None, "scale", torch.float32, 2.0)
    with_bias = V.epilogue.trace(x, b, "shift", torch.float32, 2.0)
    texts = [g.text for g in plain.guards]
    assert "bias is None" in texts and "mode == 'scale'" in texts and "dtype == torch.float32" in texts
    assert "bias is not None" in [g.text for g in with_bias.guards]
    assert "scale == 2.0" not in texts  # a float passed on to ATen is read per call, not specialised


def test_float_argument_used_in_host_arithmetic_is_specialised_with_a_guard():
    @tt.op(f"{V.NS}::float_host")
    def float_host(x: torch.Tensor, eps: float) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        V.axpy_kernel[(math.ceil(n / 256),)](x, x, out, n, 1.0 / eps, BLOCK=256)
        return out

    x = torch.randn(300)
    plan = float_host.trace(x, 0.5)
    assert "eps == 0.5" in [g.text for g in plan.guards]
    torch.testing.assert_close(float_host(x, 0.5), x * 2.0 + x)
    torch.testing.assert_close(float_host(x, 0.25), x * 4.0 + x)


def test_in_place_aten_steps_write_declared_arguments():
    x, out = torch.randn(4, 6), torch.randn(4, 6)
    expected = out.clone()
    V.zero_then_fill_reference(x, expected)
    V.zero_then_fill(x, out)
    torch.testing.assert_close(out, expected)

    @tt.op(f"{V.NS}::undeclared_write")
    def undeclared_write(x: torch.Tensor) -> None:
        x[1:].fill_(0.0)

    with pytest.raises(tt.TraceError, match=r"aten::fill_ \(at .*\) writes argument 'x', which the op does not "
                                            "declare"):
        undeclared_write.trace(torch.randn(4))


def test_alignment_guard_from_data_ptr():
    plan = V.aligned.trace(torch.randn(32))
    texts = [g.text for g in plan.guards]
    assert "(x.data_ptr() % 16) == 0" in texts


def test_a_device_context_in_a_cuda_trace_on_a_machine_without_a_driver():
    # A dry CUDA trace has no device to select (on a GPU, the context selects the tensors' device).
    exchange = torch.cuda._exchange_device
    plan = V.in_device_context.trace(torch.randn(300), device=torch.device("cuda", 0))
    assert [launch.kernel_name for launch in plan.launches] == ["axpy_kernel"]
    assert torch.cuda._exchange_device is exchange  # as it was, after the trace


def test_stand_ins_answer_tensor_questions_as_tensors_do():
    seen = {}

    @tt.op(f"{V.NS}::questions")
    def questions(x: torch.Tensor) -> torch.Tensor:
        seen.update(isinstance=isinstance(x, torch.Tensor), complex=x.is_complex(), floating=x.is_floating_point(),
                    grad=x.requires_grad, element=x.element_size(), ndim=x.ndim, dim=x.dim(), layout=x.layout,
                    contiguous=x.is_contiguous(), bits=(x.shape[-1] - 1).bit_length(), index=list(range(x.shape[0])),
                    device=torch.device(x.device), device_index=x.device.index, floor=math.floor(x.shape[0] / 2),
                    rounded=int(round(x.shape[1])), rounded_tens=round(x.shape[1] + 10, -1))
        return torch.empty_like(x)

    questions.trace(torch.randn(3, 5))
    assert seen == dict(isinstance=True, complex=False, floating=True, grad=False, element=4, ndim=2, dim=2,
                        layout=torch.strided, contiguous=True, bits=3, index=[0, 1, 2], device=torch.device("cpu"),
                        device_index=None, floor=1, rounded=5, rounded_tens=round(15, -1))


def test_comparing_tensors_makes_a_tensor_and_branching_on_it_is_refused():
    @tt.op(f"{V.NS}::compares")
    def compares(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x != y).to(torch.float32)

    x = torch.randn(5)
    torch.testing.assert_close(compares(x, x.clone()), torch.zeros(5))
    plan = compares.trace(x, x)
    assert [a.name for a in plan.aten_steps] == ["aten::ne", "aten::_to_copy"]


def test_an_op_returns_a_copy_of_a_view_of_its_input_in_the_view_s_layout():
    @tt.op(f"{V.NS}::returns_view")
    def returns_view(x: torch.Tensor) -> torch.Tensor:
        return x.t()

    x = torch.randn(2, 3)
    out = returns_view(x)
    assert out.data_ptr() != x.data_ptr() and out.stride() == (1, 3)
    assert torch.equal(out, x.t())
    plan = returns_view.trace(x)
    assert len(plan.views) == 1 and plan.views[0].base == 0 and plan.outputs == [1]


def test_plans_with_views_and_aten_steps_round_trip_through_bytes():
    x = torch.randn(16, 8).t()
    plan = V.flat_axpy.trace(x, torch.randn(8, 16), 0.5)
    data = V.flat_axpy.export_plans([plan])
    loaded = _C.plans_from_bytes(data)["plans"][0]
    assert [a.name for a in loaded.aten_steps] == [a.name for a in plan.aten_steps]
    assert [(s.kind, s.index) for s in loaded.order] == [(s.kind, s.index) for s in plan.order]
    assert [[e.code for e in v.sizes] for v in loaded.views] == [[e.code for e in v.sizes] for v in plan.views]


def test_list_int_argument_items_are_symbolic_and_its_length_guarded():
    x = torch.randn(4, 6)
    for shape in ([24], [3, 8], [2, 3, 4]):
        torch.testing.assert_close(V.reshaped_scale(x, shape, 2.0), V.reshaped_scale_reference(x, shape, 2.0))
    plan = V.reshaped_scale.trace(x, [3, 8], 2.0)
    assert "len(shape) == 2" in [g.text for g in plan.guards]
    assert [e.text for e in plan.allocs[0].shape] == ["shape[0]", "shape[1]"]
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, s: V.reshaped_scale(a, s, 2.0), fullgraph=True, dynamic=True)
    torch.testing.assert_close(compiled(x, [3, 8]), V.reshaped_scale_reference(x, [3, 8], 2.0))


def test_index_tensors_built_on_the_host_are_cpu_steps_of_a_cuda_plan_moved_to_the_device():
    x, cu_seqlens = torch.randn(40), torch.tensor([0, 5, 40])
    torch.testing.assert_close(V.chunk_sums(x, cu_seqlens, 16), V.chunk_sums_reference(x, cu_seqlens, 16))
    plan = V.chunk_sums.trace(x, cu_seqlens, 16, device=torch.device("cuda", 0))
    assert not plan.fallback
    on_host = {s.name for s in plan.aten_steps for a in s.args if a.kind == _C.AtenArgKind.DEVICE and a.text == "cpu"}
    assert on_host == {"aten::arange"}  # torch.arange(n) without a device: on the host, as eager makes it
    moved = [s for s in plan.aten_steps if s.name == "aten::_to_copy"]
    assert len(moved) == 1 and [a.text for a in moved[0].args if a.kind == _C.AtenArgKind.DEVICE] == [""]


@pytest.mark.parametrize("op, why", [
    (V.launches_a_host_tensor, r"is given 'ones[\w]+', a tensor the body made on the host; the kernel runs on cuda:0"),
    (V.returns_a_host_tensor, r"the body returns 'arange[\w]+', a tensor it made on the host; the op's results are on "
                              r"cuda:0"),
])
def test_a_host_tensor_a_kernel_takes_or_the_op_returns_is_refused_in_a_cuda_trace(op, why):
    x = torch.randn(300)
    with pytest.raises(tt.TraceError, match=why):
        op.trace(x, device=torch.device("cuda", 0))
    torch.testing.assert_close(V.launches_a_host_tensor(x), x + 1)  # on the CPU path, the host is the device
