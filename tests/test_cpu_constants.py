"""CPU tests: tensors an op body did not receive (a module's buffer, a library's state) are plan constants. The plan
holds each one weakly; a call takes it as it is then, and a call after it was freed, or after its dtype, sizes or
strides changed, traces the op again. What the plans hold is checked through dry runs (the plan's steps on CPU
tensors, launches keyed but not run), torch.compile's fake implementation, and the CPU path's results against torch.
GPU counterpart (the plans' native calls): tests/test_gpu_constants.py."""

import gc

import pytest
import torch

import torch_tile as tt
from torch_tile import _C
from torch_tile._errors import TraceError
from torch_tile._plan import StepKind

import constant_ops as C


@pytest.fixture(autouse=True)
def _fresh_state():
    for op in (C.lookup, C.scaled):
        _C.clear_plans(op.qualname)
    C.LOOKUP.table = torch.arange(64, dtype=torch.float32) * 0.5
    C.SCALES[torch.device("cpu")] = torch.full((8,), 3.0)
    yield


def _indices(n=50):
    return torch.randint(0, 64, (n,), generator=torch.Generator().manual_seed(0))


def test_a_kernel_given_a_modules_buffer_is_one_constant_step():
    index = _indices()
    plan = C.lookup.trace(index)
    assert not plan.fallback
    assert [s.kind for s in plan.order] == [StepKind.ALLOC, StepKind.CONSTANT, StepKind.LAUNCH]
    (constant,) = plan.constants
    assert (constant.sizes, constant.strides, constant.dtype) == ([64], [1], torch.float32)
    assert constant.site.endswith("constant_ops.py:35")
    assert constant.tensor() is C.LOOKUP.table  # the module's own tensor, not a copy
    _C.variant_keys(C.lookup.qualname, (index,), {})  # a dry run installs the op's plan
    (explained,) = tt.explain(C.lookup).plans
    assert explained.steps[1] == f"hold a torch.float32 tensor of sizes (64,) the op did not take, used at " \
                                 f"{constant.site}"
    torch.testing.assert_close(C.lookup(index), C.LOOKUP.table[index], rtol=0, atol=0)


def test_the_plan_does_not_keep_the_tensor_alive():
    plan = C.lookup.trace(_indices())
    C.LOOKUP.table = torch.arange(64, dtype=torch.float32)  # the module replaces its buffer: the old one is freed
    gc.collect()
    assert plan.constants[0].tensor() is None


def _held_tensor(op):
    (plan,) = _C.plans_of(op.qualname)
    (constant,) = plan.constants
    return constant.tensor()


def test_a_call_after_the_tensor_was_replaced_traces_again_and_holds_the_new_one():
    index = _indices()
    _C.variant_keys(C.lookup.qualname, (index,), {})
    assert _held_tensor(C.lookup) is C.LOOKUP.table
    C.LOOKUP.table = torch.arange(64, dtype=torch.float32) * 2  # the old buffer is freed with it
    _C.variant_keys(C.lookup.qualname, (index,), {})
    assert C.lookup.plan_count == 1  # the stale plan is gone, not kept beside the new one
    assert _held_tensor(C.lookup) is C.LOOKUP.table


def test_a_call_after_the_tensor_changed_its_sizes_in_place_traces_again():
    index = _indices()
    keys = _C.variant_keys(C.lookup.qualname, (index,), {})
    kept = C.LOOKUP.table  # kept alive: only its layout changes
    kept.resize_(128)
    _C.variant_keys(C.lookup.qualname, (index,), {})
    (plan,) = _C.plans_of(C.lookup.qualname)
    assert plan.constants[0].sizes == [128]
    assert _C.variant_keys(C.lookup.qualname, (index,), {}) == keys  # the same variant (alignment as before)


def test_a_tensor_changed_in_its_data_is_read_as_it_is_then():
    index = _indices()
    _C.variant_keys(C.lookup.qualname, (index,), {})
    C.LOOKUP.table.mul_(4)  # in place: the plan holds the same tensor, whose data the kernel reads per call
    _C.variant_keys(C.lookup.qualname, (index,), {})
    assert _held_tensor(C.lookup) is C.LOOKUP.table
    torch.testing.assert_close(C.lookup(index), C.LOOKUP.table[index], rtol=0, atol=0)


def test_a_held_tensor_in_an_aten_step_and_under_torch_compile():
    x = torch.randn(8)
    plan = C.scaled.trace(x)
    assert [s.kind for s in plan.order] == [StepKind.CONSTANT, StepKind.ATEN, StepKind.ATEN]
    assert plan.aten_steps[0].name == "aten::mul"
    torch.testing.assert_close(C.scaled(x), x * 3 + 1)
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: C.scaled(t) * 2, fullgraph=True)
    torch.testing.assert_close(compiled(x), (x * 3 + 1) * 2)


def test_a_plan_holding_a_tensor_cannot_travel_in_a_bundle():
    plan = C.lookup.trace(_indices())
    with pytest.raises(ValueError, match=r"constants::lookup: a plan holds a tensor its body did not receive \(first "
                                         r"used at .*constant_ops.py:35\), which only this process has"):
        C.lookup.export_plans([plan])


def test_what_a_plan_cannot_hold_is_refused_naming_the_use():
    with pytest.raises(TraceError, match="the body returns a tensor it did not receive"):
        C.leaked.trace(_indices(10))
    C.LOOKUP.table = torch.arange(64, dtype=torch.float32).requires_grad_()
    with pytest.raises(TraceError, match=r"constant_ops.py:35: the launch uses a tensor that requires a gradient "
                                         r"the op did not take"):
        C.lookup.trace(_indices())
    C.LOOKUP.table = torch.arange(64, dtype=torch.float32, device="meta")
    with pytest.raises(TraceError, match="uses a tensor on meta the op did not take; the op's tensors are on cpu"):
        C.lookup.trace(_indices())


def test_a_tensor_the_body_computed_outside_the_plan_is_not_held_past_the_trace():
    # Only the trace kept it alive: a plan holding it would find it gone at every call (and trace again each time).
    with pytest.raises(TraceError, match=r"the tensor the body uses at .*constant_ops.py:\d+ was computed during "
                                         r"the trace, outside the plan's steps"):
        C.temporary.trace(_indices())
    index = _indices()
    torch.testing.assert_close(C.temporary(index), index.float(), rtol=0, atol=0)  # the body runs it, as eager


def test_a_held_tensor_written_before_a_check_on_the_data_is_refused():
    with pytest.raises(TraceError, match=r"aten::add_ at .*constant_ops.py:\d+ writes a tensor the op did not take "
                                         r"\(module or library state\) before the body decides"):
        C.counted.trace(torch.ones(4))
