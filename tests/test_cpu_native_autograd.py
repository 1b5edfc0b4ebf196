"""CPU tests of native autograd's traced parts: what a forward plan
keeps for its backward (setup_context traced into a BackwardSpec), the gradient
op (the registered backward as a tile op: its schema, its plans, its eager body
against the autograd.Function path), and the refusals that keep the Python path.
The C++ node itself runs on CUDA only: test_gpu_native_autograd.py."""

import pytest
import torch

import native_autograd_ops as ops
from torch_tile import TraceError
from torch_tile import kernels as K
from torch_tile._op import registered_ops

CUDA = torch.device("cuda:0")  # the device traced plans are for (CPU tensors stand for CUDA ones)


def _gradient_op(plan):
    return registered_ops()[plan.backward.gradient_op]


def test_spec_keeps_saved_tensors_sizes_and_constants():
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    plan = ops.mul.trace(x, y, device=CUDA)
    spec = plan.backward
    assert spec.gradient_op == f"{ops.NS}_grad::mul" and spec.reason == ""
    assert list(spec.saved) == [0, 1]  # both arguments, by slot
    assert [e.text for e in spec.ints] == ["x.size(0)", "x.size(1)"]  # ctx.shape, evaluated per call
    assert list(spec.differentiable) == [1] and spec.materialize_grads
    grad_op = _gradient_op(plan)
    assert grad_op.schema == ("(Tensor saved_0, Tensor saved_1, int[] ints, Tensor? grad_0, "
                              "int needs_input_grad) -> (Tensor, Tensor)")


def test_spec_reads_float_arguments_per_call():
    spec = ops.scale.trace(torch.randn(16), 2.5, device=CUDA).backward
    assert list(spec.saved) == [] and list(spec.float_args) == [1]  # argument 1, not the traced 2.5


def test_spec_saves_outputs_and_marks_non_differentiable_ones():
    x, w = torch.randn(6, 40), torch.randn(40)
    plan = K.rms_norm.trace(x, w, 1e-6, device=CUDA)
    out_slot, rstd_slot = plan.outputs
    assert list(plan.backward.saved) == [0, 1, rstd_slot]
    assert list(plan.backward.differentiable) == [1, 0]  # rstd: mark_non_differentiable


def test_gradient_plan_calls_the_backward_tile_op_and_returns_none_for_eps():
    x, w = torch.randn(6, 40), torch.randn(40)
    plan = K.rms_norm.trace(x, w, 1e-6, device=CUDA)
    out, rstd = K.rms_norm(x, w, 1e-6)
    # rstd's gradient (non-differentiable) is not passed: its size is, for zeros the backward never reads.
    assert [e.text for e in plan.backward.ints] == ["x.size(0)"]
    grad_plan = _gradient_op(plan).trace(x, w, rstd, [6], torch.randn_like(out), None, 0b111, device=CUDA)
    assert [s.name for s in grad_plan.aten_steps] == ["tile::rms_norm_backward"]
    assert len(grad_plan.allocs) == 0  # no zeros made
    assert grad_plan.outputs[2] == -1  # eps's gradient is None


def test_needs_input_grad_bits_become_guards_only_where_read():
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    grad_op = _gradient_op(ops.mul.trace(x, y, device=CUDA))
    g = torch.randn(4, 8)
    both = grad_op.trace(x, y, [4, 8], g, 0b11, device=CUDA)
    only_y = grad_op.trace(x, y, [4, 8], g, 0b10, device=CUDA)
    assert len(both.aten_steps) == 2 and len(only_y.aten_steps) == 1
    assert only_y.outputs[0] == -1
    assert any("needs_input_grad" in e.text for e in only_y.guards)


def test_a_gradient_may_be_an_argument_of_the_gradient_op():
    # scale_by's backward is `grad * k`: an ATen step; pair's returns new tensors; an identity would return grad.
    x = torch.randn(32)
    grad_op = _gradient_op(ops.scale_by.trace(x, 3, device=CUDA))
    plan = grad_op.trace([3], torch.randn(32), 0b1, device=CUDA)
    assert [s.name for s in plan.aten_steps] == ["aten::mul"] and plan.outputs[1] == -1


@pytest.mark.parametrize("name, args", [
    ("mul", lambda: (torch.randn(4, 8), torch.randn(4, 8))),
    ("scale", lambda: (torch.randn(33), -1.5)),
    ("scale_by", lambda: (torch.randn(33), 3)),
    ("pair", lambda: (torch.randn(33),)),
])
def test_gradient_op_body_matches_the_autograd_function_path(name, args):
    """The gradient op's body (what runs natively, and eagerly under create_graph) against the
    autograd.Function path that CPU calls take, on the same inputs."""
    op = getattr(ops, name)
    values = args()
    plan = op.trace(*values, device=CUDA)
    spec = plan.backward
    outs = op(*values)
    outs = outs if isinstance(outs, tuple) else (outs,)
    grads = [torch.randn_like(o) for o in outs]
    n = len(op.arg_names)
    saved = [values[s] if s < n else outs[list(plan.outputs).index(s)] for s in spec.saved]
    ints = [int(values[0].shape[d]) for d in range(len(spec.ints))] if name == "mul" else \
        [values[1]] if name == "scale_by" else []
    floats = [values[a] for a in spec.float_args]
    got = _gradient_op(plan).fn(*saved, ints, *floats, *grads, (1 << n) - 1)
    leaves = [v.clone().requires_grad_() if isinstance(v, torch.Tensor) else v for v in values]
    expected = op(*leaves)
    torch.autograd.backward(expected, grads)
    for leaf, g in zip(leaves, got):
        if isinstance(leaf, torch.Tensor):
            torch.testing.assert_close(g, leaf.grad)
        else:
            assert g is None


def test_setup_context_that_reads_data_keeps_the_python_path_and_says_where():
    spec = ops.reads_data_in_setup.trace(torch.randn(8), device=CUDA).backward
    assert spec.gradient_op == ""
    assert "native_autograd_ops.py" in spec.reason and "data" in spec.reason
    # What the failed setup trace recorded is not left in the forward plan.
    assert ops.reads_data_in_setup.trace(torch.randn(8), device=CUDA).aten_steps[0].name == f"{ops.NS}::scale"
    assert len(ops.reads_data_in_setup.trace(torch.randn(8), device=CUDA).aten_steps) == 1


def test_backward_that_reads_data_fails_its_trace_with_the_line():
    plan = ops.reads_data_in_backward.trace(torch.randn(8), device=CUDA)
    with pytest.raises(TraceError, match="native_autograd_ops.py"):
        _gradient_op(plan).trace([], torch.randn(8), 0b1, device=CUDA)


def _doubled(x: torch.Tensor) -> torch.Tensor:
    return ops.scale(x, 2.0)


def test_gradient_op_count_mismatch_is_a_clear_error():
    bad = ops.tt.op(f"{ops.NS}::bad_count")(_doubled)
    bad.register_autograd(lambda ctx, grad: (grad, grad))
    grad_op = _gradient_op(bad.trace(torch.randn(4), device=CUDA))
    with pytest.raises(TraceError, match="returned 2 gradient"):
        grad_op.trace([], torch.randn(4), 0b1, device=CUDA)


def test_register_autograd_retraces_so_plans_carry_the_spec():
    x = torch.randn(8)
    op = ops.tt.op(f"{ops.NS}::late")(_doubled)
    assert op.trace(x, device=CUDA).backward is None  # no backward yet
    op.register_autograd(lambda ctx, grad: scale_grad(grad))
    assert op.trace(x, device=CUDA).backward.gradient_op == f"{ops.NS}_grad::late"


def scale_grad(grad):
    return ops.scale(grad.contiguous(), 1.0)


def test_fake_implementation_makes_no_gradient_op():
    before = set(registered_ops())
    op = ops.tt.op(f"{ops.NS}::fake_only")(_doubled)
    op.register_autograd(lambda ctx, grad: scale_grad(grad))
    with torch._subclasses.fake_tensor.FakeTensorMode():
        op(torch.empty(8, device="meta"))
    assert set(registered_ops()) - before == {f"{ops.NS}::fake_only"}


def test_a_spec_that_keeps_the_python_path_is_a_valid_plan():
    plan = ops.reads_data_in_setup.trace(torch.randn(8), device=CUDA)
    plan.validate(ops.reads_data_in_setup.qualname, 1)  # was refused as "a malformed backward"


def test_only_gradient_ops_may_return_none():
    from torch_tile import _plan

    x = torch.randn(16)
    plan = ops.scale.trace(x, 2.0, device=CUDA)
    bad = _plan.LaunchPlan(tensor_guards=list(plan.tensor_guards), guards=list(plan.guards),
                           num_shape_guards=plan.num_shape_guards, allocs=list(plan.allocs),
                           launches=list(plan.launches), outputs=[-1])
    with pytest.raises(ValueError, match="a plan returns None"):
        ops.scale.load_plans(ops.scale.export_plans([bad]))


def test_zeros_for_a_non_differentiable_output_are_made_where_the_backward_reads_them():
    x = torch.randn(24)
    plan = ops.with_stat.trace(x, device=CUDA)
    assert list(plan.backward.differentiable) == [1, 0]
    grad_op = _gradient_op(plan)
    grad = torch.randn(24)
    grad_plan = grad_op.trace([24], grad, None, 0b1, device=CUDA)
    assert [a.zero for a in grad_plan.allocs] == [True]  # zeros(24), read by the backward's `+`
    got = grad_op.fn([24], grad, None, 0b1)  # eagerly: real zeros
    torch.testing.assert_close(got[0], 2 * grad)


def test_a_setup_context_keeping_an_object_keeps_the_python_path_and_leaves_no_steps():
    plan = ops.keeps_an_object.trace(torch.randn(8), device=CUDA)
    assert plan.backward.gradient_op == "" and "holds a object" in plan.backward.reason
    assert [s.name for s in plan.aten_steps] == [f"{ops.NS}::scale"]  # the setup's `* 2` was dropped
