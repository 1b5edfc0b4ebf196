"""list[Tensor] arguments and list[Tensor] returns on the CPU: what the tracer
records (item slots, length guards, the ATen step reading a list of slots),
the CPU path against torch references, the fake implementation under
torch.compile with dynamic shapes, opcheck, plans through bytes, and the
errors. GPU counterpart: tests/test_gpu_tensor_lists.py."""

from __future__ import annotations

import pytest
import torch

import torch_tile as tt
from torch_tile import _C
from torch_tile import _plan
from torch_tile._plan import ArgKind, AtenArgKind, StepKind

import tensor_list_ops as L


@pytest.mark.parametrize("name", sorted(L.CASES))
def test_cpu_path_matches_torch(name):
    op, reference = L.CASES[name]
    args = L.case_args(name, "cpu")
    torch.testing.assert_close(op(*args), reference(*args))


def test_list_return_length_follows_an_int_argument():
    x = torch.randn(5, 6)
    for parts in (0, 1, 3):
        got = L.split_scale(x, parts)
        assert isinstance(got, list) and len(got) == parts
        for g, r in zip(got, L.split_scale_reference(x, parts)):
            torch.testing.assert_close(g, r)


@pytest.mark.parametrize("name", sorted(L.CASES))
def test_compiled_with_dynamic_shapes_and_opcheck(name):
    op, reference = L.CASES[name]
    args = L.case_args(name, "cpu")
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: op(*a), fullgraph=True, dynamic=True)
    torch.testing.assert_close(compiled(*args), reference(*args))
    torch.library.opcheck(op.overload, args)


def test_list_return_under_compile_and_opcheck():
    x = torch.randn(5, 6)
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: L.split_scale(t, 3), fullgraph=True, dynamic=True)
    for g, r in zip(compiled(x), L.split_scale_reference(x, 3)):
        torch.testing.assert_close(g, r)
    torch.library.opcheck(L.split_scale.overload, (x, 3))


def test_items_take_the_slots_after_the_arguments_and_the_length_is_guarded():
    assert L.cat_flat.arg_kinds[0] == ArgKind.TENSOR_LIST
    xs, alpha = L.case_args("cat_flat", "cpu")
    plan = L.cat_flat.trace(xs, alpha)
    assert plan.num_list_tensors == 3
    # Items are slots 2, 3, 4 (after xs and alpha): their dtypes and ranks are guarded like arguments'.
    assert [(g.arg, g.ndim) for g in plan.tensor_guards] == [(2, 2), (3, 1), (4, 3)]
    assert "len(xs) == 3" in [g.text for g in plan.guards]
    # The allocation's size is the sum of the items' numels, read from their slots.
    texts = [e.text for e in plan.allocs[0].shape]
    assert all(f"xs[{k}]" in texts[0] for k in range(3)), texts
    # A shorter list needs its own plan: the guard fails for it.
    assert "len(xs) == 2" in [g.text for g in L.cat_flat.trace(xs[:2], alpha).guards]


def test_an_aten_step_takes_the_items_as_a_list_of_slots():
    xs, alpha = L.case_args("stack_scale", "cpu")
    plan = L.stack_scale.trace(xs, alpha)
    [stack] = plan.aten_steps
    assert stack.name == "aten::stack"
    lists = [a for a in stack.args if a.kind == AtenArgKind.TENSOR_LIST]
    assert [a.slots for a in lists] == [[2, 3, 4]]
    assert [s.kind for s in plan.order][0] == StepKind.ATEN


def test_plans_with_lists_round_trip_through_bytes():
    xs, alpha = L.case_args("cat_flat", "cpu")
    plan = L.cat_flat.trace(xs, alpha)
    data = L.cat_flat.export_plans([plan])
    read = _C.plans_from_bytes(data)
    assert read["arg_kinds"] == [ArgKind.TENSOR_LIST, ArgKind.FLOAT]
    [back] = read["plans"]
    assert back.num_list_tensors == 3 and [g.text for g in back.guards] == [g.text for g in plan.guards]
    assert L.cat_flat.load_plans(data) == 1
    L.cat_flat.clear_plans()


def test_list_arguments_are_checked_like_tensor_arguments():
    # torch's own argument parser refuses a non-tensor item, naming op, argument and types.
    with pytest.raises(RuntimeError, match=r"tt_lists::scale_each\(\) Expected a value of type 'List\[Tensor\]' "
                                           r"for argument 'xs'"):
        L.scale_each([torch.randn(3), 3], 1.0)
    with pytest.raises(ValueError, match=r"argument 'xs\[1\]' expected a tensor on cpu like argument 'xs', got a "
                                         r"tensor on meta"):
        L.scale_each([torch.randn(3), torch.randn(3, device="meta")], 1.0)


def test_a_list_item_that_requires_grad_is_refused_not_silently_undifferentiated():
    x = torch.randn(4, requires_grad=True)
    with pytest.raises(NotImplementedError, match="argument 'xs' .* holds a tensor that requires grad"):
        L.sum_all([x, x.detach()])
    with torch.no_grad():  # no gradient needed: runs
        torch.testing.assert_close(L.sum_all([x, x], 0.5), x.detach())


def test_a_written_argument_overlapping_a_list_item_is_refused():
    buf = torch.randn(10)
    with pytest.raises(ValueError, match=r"argument 'out' is written and partially overlaps argument 'xs'\[0\]"):
        L.scale_into(buf[2:8], [buf[:6]], 2.0)
    out = torch.empty(6)
    L.scale_into(out, [buf[:6]], 2.0)
    torch.testing.assert_close(out, buf[:6] * 2.0)


def test_ops_writing_a_list_are_refused_at_definition():
    def body(xs: list[torch.Tensor]) -> None:
        pass

    with pytest.raises(TypeError, match="argument 'xs': ops that write the tensors of a list\\[Tensor\\] argument"):
        tt.op(f"{L.NS}::write_list", body, mutates_args=("xs",))


def test_a_body_returning_a_tensor_for_a_list_return_is_refused():
    @tt.op(f"{L.NS}::not_a_list")
    def not_a_list(x: torch.Tensor) -> list[torch.Tensor]:
        out = torch.empty_like(x)
        L._launch_scale(x, out, 1.0)
        return out

    with pytest.raises(tt.TraceError, match="the schema returns Tensor\\[\\]; the body returned"):
        not_a_list.trace(torch.randn(4))


def test_a_list_return_is_not_differentiated_silently():
    x = torch.randn(4, 5, requires_grad=True)
    with pytest.raises(NotImplementedError, match="tt_lists::split_scale returns list\\[Tensor\\], and tile ops do not "
                                                  "differentiate through list returns"):
        L.split_scale(x, 2)
    with pytest.raises(RuntimeError, match="register_autograd: the op returns list\\[Tensor\\]"):
        L.split_scale.register_autograd(lambda ctx, grads: (None, None))
    with torch.no_grad():
        assert len(L.split_scale(x, 2)) == 2


def test_plans_that_do_not_guard_each_list_length_are_refused():
    xs, alpha = L.case_args("cat_flat", "cpu")
    plan = L.cat_flat.trace(xs, alpha)
    unguarded = [g for g in plan.guards if g.text != "len(xs) == 3"]
    assert len(unguarded) == len(plan.guards) - 1
    bad = _plan.LaunchPlan(plan.tensor_guards, unguarded, 0, plan.allocs, plan.launches, plan.outputs,
                           views=plan.views, aten_steps=plan.aten_steps, order=plan.order,
                           num_list_tensors=plan.num_list_tensors)
    with pytest.raises(ValueError, match="tt_lists::cat_flat: a plan does not guard the length of list argument 'xs'"):
        L.cat_flat.load_plans(L.cat_flat.export_plans([bad]))
    miscounted = _plan.LaunchPlan(plan.tensor_guards, plan.guards, 0, plan.allocs, plan.launches, plan.outputs,
                                  views=plan.views, aten_steps=plan.aten_steps, order=plan.order,
                                  num_list_tensors=4)
    with pytest.raises(ValueError, match="list lengths add up to 3 tensors, not 4"):
        L.cat_flat.load_plans(L.cat_flat.export_plans([miscounted]))


def test_plans_whose_expressions_read_an_argument_against_its_kind_are_refused():
    xs, alpha = L.case_args("cat_flat", "cpu")
    plan = L.cat_flat.trace(xs, alpha)
    Op = _plan.ExprOp
    # `len(alpha)`: a float read as a list (its list fields hold nothing for a float).
    wrong = _plan.Expr([int(Op.LIST_LEN), 1, int(Op.CONST), 3, int(Op.EQ)], "len(alpha) == 3")
    bad = _plan.LaunchPlan(plan.tensor_guards, [*plan.guards, wrong], 0, plan.allocs, plan.launches, plan.outputs,
                           views=plan.views, aten_steps=plan.aten_steps, order=plan.order,
                           num_list_tensors=plan.num_list_tensors)
    with pytest.raises(ValueError, match="tt_lists::cat_flat: launch plan has an expression `len\\(alpha\\) == 3` "
                                         "reading argument 1 as its kind does not allow"):
        L.cat_flat.load_plans(L.cat_flat.export_plans([bad]))
