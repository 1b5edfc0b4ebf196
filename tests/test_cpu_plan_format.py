"""CPU tests of the launch-plan format: one definition in C++ that
Python takes its kinds from, typed plan objects, and the serialized form
(versioned, checksummed, refused when corrupt, truncated or of another
version). GPU counterpart: a plan loaded from bytes runs like the traced one
(tests/test_gpu_plan_format.py)."""

import struct

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import _C, _plan
from torch_tile.trace import expr as _expr
from torch_tile import kernels as K
from torch_tile import _testing

HEADER = 8 + 4 + 4 + 8  # magic, version, CRC-32C, payload size


def _crc32c(data: bytes) -> int:
    """CRC-32C, written independently of the C++ one (bitwise, no table)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def _reseal(payload: bytes, version: int = _C.PLAN_FORMAT_VERSION) -> bytes:
    return b"TTPLANS\0" + struct.pack("<IIQ", version, _crc32c(payload), len(payload)) + payload


def _example_cases():
    """(op, args) for every example op that traces on CPU tensors (fp32/fp16)."""
    x = torch.randn(8, 40)
    w, b = torch.randn(40), torch.randn(40)
    a16, b16 = torch.randn(64, 32, dtype=torch.float16), torch.randn(32, 64, dtype=torch.float16)
    targets = torch.randint(0, 40, (8,))
    return [
        (K.add, (torch.randn(100), torch.randn(100))),
        (K.add_, (torch.randn(100), torch.randn(100))),
        (K.softmax, (x,)),
        (K.softmax, (torch.randn(4, 3000),)),  # the other branch
        (K.layer_norm, (x, w, b, 1e-5)),
        (K.matmul, (torch.randn(32, 16), torch.randn(16, 24))),
        (K.matmul_tma, (a16, b16)),
        (K.rms_norm, (x, w, 1e-6)),
        (K.swiglu, (x, torch.randn(8, 40))),
        (K.cross_entropy, (x, targets)),
    ]


def _same_expr(a, b):
    assert list(a.code) == list(b.code) and a.text == b.text


def _same_plan(a, b):
    assert [(g.arg, g.dtype, g.ndim) for g in a.tensor_guards] == [(g.arg, g.dtype, g.ndim) for g in b.tensor_guards]
    assert len(a.guards) == len(b.guards) and a.num_shape_guards == b.num_shape_guards
    for x, y in zip(a.guards, b.guards):
        _same_expr(x, y)
    assert len(a.allocs) == len(b.allocs)
    for x, y in zip(a.allocs, b.allocs):
        assert (x.kind, x.like_slot, x.dtype, x.zero) == (y.kind, y.like_slot, y.dtype, y.zero)
        assert len(x.shape) == len(y.shape)
        for e, f in zip(x.shape, y.shape):
            _same_expr(e, f)
    assert len(a.launches) == len(b.launches)
    for x, y in zip(a.launches, b.launches):
        assert (x.kernel, x.kernel_name, x.config, x.site) == (y.kernel, y.kernel_name, y.config, y.site)
        for e, f in zip(x.grid, y.grid):
            _same_expr(e, f)
        assert len(x.bindings) == len(y.bindings)
        for p, q in zip(x.bindings, y.bindings):
            assert (p.kind, p.slot, p.float_value, p.specialize, p.specialize_alignment, p.specialize_layout) == \
                (q.kind, q.slot, q.float_value, q.specialize, q.specialize_alignment, q.specialize_layout)
            assert (p.expr is None) == (q.expr is None)
            if p.expr is not None:
                _same_expr(p.expr, q.expr)
            assert (p.desc is None) == (q.desc is None)
            if p.desc is not None:
                assert (p.desc.name, p.desc.nan_padding, p.desc.round_tf32) == \
                    (q.desc.name, q.desc.nan_padding, q.desc.round_tf32)
                for e, f in zip(p.desc.shape + p.desc.strides, q.desc.shape + q.desc.strides):
                    _same_expr(e, f)
    assert list(a.outputs) == list(b.outputs)


# -- one definition ---------------------------------------------------------------------------------------


def test_python_takes_every_kind_from_the_runtime():
    assert _plan.ExprOp is _C.ExprOp and _expr.Op is _C.ExprOp
    assert _plan.BindingKind is _C.BindingKind and _plan.AllocKind is _C.AllocKind and _plan.ArgKind is _C.ArgKind
    # The key words the frontend decodes are the runtime's constants.
    assert (_plan.key_word.UNALIGNED, _plan.key_word.ALIGNED16) == (1, 2)
    assert _C.dtype_of_packed(_C.packed_dtype(torch.bfloat16)) is torch.bfloat16
    for dtype in (torch.float32, torch.float16, torch.int64, torch.bool, torch.float8_e4m3fn, torch.uint32):
        assert _C.dtype_of_packed(_C.packed_dtype(dtype)) is dtype


def test_a_traced_plan_is_typed():
    plan = K.add.trace(torch.randn(100), torch.randn(100))
    assert isinstance(plan, _plan.LaunchPlan)
    (launch,) = plan.launches
    assert launch.kernel_name == "add_kernel" and launch.site.endswith(".py:" + launch.site.rsplit(":", 1)[1])
    kinds = [b.kind for b in launch.bindings]
    K_ = _plan.BindingKind
    assert kinds == [K_.TENSOR, K_.TENSOR, K_.TENSOR, K_.INT, K_.STATIC]  # x, y, out, n, BLOCK
    assert launch.bindings[3].expr.text == "x.numel()"
    assert plan.outputs == [2] and plan.allocs[0].kind == _plan.AllocKind.EMPTY_LIKE


def test_plans_are_checked_when_built():
    with pytest.raises(ValueError, match="bad opcode"):
        _plan.Expr([999], "nonsense")
    with pytest.raises(ValueError, match="malformed expression"):
        _plan.Expr([int(_plan.ExprOp.ADD)], "+")
    with pytest.raises(ValueError, match="no registered kernel"):
        _plan.LaunchStep(12345, 0, [_plan.Expr([0, 1], "1")] * 3, [], "here")
    with pytest.raises(TypeError, match="a launch plan holds no tensor of dtype"):
        _plan.TensorGuard(0, torch.float8_e8m0fnu, 1)
    plan = K.add.trace(torch.randn(10), torch.randn(10))
    bad = _plan.LaunchPlan(plan.tensor_guards, plan.guards, plan.num_shape_guards, plan.allocs, plan.launches, [7])
    with pytest.raises(ValueError, match="tile::add: launch plan references a bad slot"):
        bad.validate("tile::add", 2)


def test_data_reads_are_checked_when_built():
    """Guards select a plan before any step runs: they may not read data; a check reads only values read and
    tensors made before it; a read reads a tensor that exists."""
    R, C, V = _plan.StepKind.READ, _plan.StepKind.CHECK, _plan.ExprOp.READ
    plan = K.add.trace(torch.randn(10), torch.randn(10))
    alloc_then_launch = list(plan.order)
    read0 = _plan.Expr([int(V), 0], "n")

    def built(guards=(), reads=(), checks=(), order=()):
        return _plan.LaunchPlan(plan.tensor_guards, list(plan.guards) + list(guards), plan.num_shape_guards,
                                plan.allocs, plan.launches, list(plan.outputs), order=list(order),
                                reads=list(reads), checks=list(checks))

    ok = built(reads=[_plan.ReadStep(0, "here")], checks=[_plan.CheckStep(read0, "here")],
               order=[_plan.PlanStep(R, 0), _plan.PlanStep(C, 0), *alloc_then_launch])
    ok.validate("tile::add", 2)
    with pytest.raises(ValueError, match="has a guard `n` on a value read from the data"):
        built(guards=[read0], order=alloc_then_launch).validate("tile::add", 2)
    with pytest.raises(ValueError, match="checks a value not yet made"):
        built(reads=[_plan.ReadStep(0, "here")], checks=[_plan.CheckStep(read0, "here")],
              order=[_plan.PlanStep(C, 0), _plan.PlanStep(R, 0), *alloc_then_launch]).validate("tile::add", 2)
    with pytest.raises(ValueError, match="reads the data of a bad slot"):
        built(reads=[_plan.ReadStep(2, "here")],  # the allocation's slot, before the allocation
              order=[_plan.PlanStep(R, 0), *alloc_then_launch]).validate("tile::add", 2)
    with pytest.raises(ValueError, match="needs an order"):
        _plan.LaunchPlan(plan.tensor_guards, plan.guards, 0, plan.allocs, plan.launches, [2],
                         reads=[_plan.ReadStep(0, "here")])
    # Round trip: the steps, their order and their sites.
    (loaded,) = _C.plans_from_bytes(K.add.export_plans([ok]))["plans"]
    assert [(s.kind, s.index) for s in loaded.order] == [(s.kind, s.index) for s in ok.order]
    assert [(r.slot, r.site) for r in loaded.reads] == [(0, "here")]
    _same_expr(loaded.checks[0].condition, read0)


# -- serialized plans ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(len(_example_cases())))
def test_round_trip_of_every_example_op(index):
    op, args = _example_cases()[index]
    plan = op.trace(*args)
    data = op.export_plans([plan])
    read = _C.plans_from_bytes(data)
    assert read["qualname"] == op.qualname and read["schema"] == op.schema
    assert read["num_returns"] == op.num_returns and len(read["plans"]) == 1
    _same_plan(plan, read["plans"][0])
    assert op.export_plans(read["plans"]) == data  # bytes -> plans -> the same bytes
    # The loaded plan computes the same specialization keys for the call.
    assert _testing.specialization_keys(read["plans"][0], args) == _testing.specialization_keys(plan, args)


def test_installed_plans_cover_their_cases_without_tracing():
    x, y = torch.randn(50), torch.randn(50)
    data = K.add.export_plans([K.add.trace(x, y)])
    K.add.clear_plans()
    assert K.add.plan_count == 0
    assert K.add.load_plans(data) == 1 and K.add.plan_count == 1
    _same_plan(K.add.plans()[0], K.add.trace(x, y))
    K.add.clear_plans()


def test_plans_of_another_op_or_signature_are_refused():
    data = K.add.export_plans([K.add.trace(torch.randn(8), torch.randn(8))])
    with pytest.raises(ValueError, match=r"tile::softmax: cannot install plans of op tile::add"):
        K.softmax.load_plans(data)


@pytest.mark.parametrize("fault", ["flip", "truncate", "append", "version", "magic", "empty"])
def test_corrupt_truncated_or_foreign_bytes_are_refused(fault):
    data = K.add.export_plans([K.add.trace(torch.randn(8), torch.randn(8))])
    if fault == "flip":
        bad = data[:HEADER + 20] + bytes([data[HEADER + 20] ^ 0x40]) + data[HEADER + 21:]
        match = "checksum mismatch"
    elif fault == "truncate":
        bad, match = data[:-7], "truncated"
    elif fault == "append":
        bad, match = data + b"\0", "truncated or with trailing data"
    elif fault == "version":
        bad = _reseal(data[HEADER:], version=1)
        match = f"format version 1; this torch_tile reads version {_C.PLAN_FORMAT_VERSION}"
    elif fault == "magic":
        bad, match = b"XXPLANS\0" + data[8:], "no TTPLANS header"
    else:
        bad, match = b"", "no TTPLANS header"
    with pytest.raises(ValueError, match=match):
        _C.plans_from_bytes(bad)
    with pytest.raises(ValueError):
        K.add.load_plans(bad)
    assert _C.plans_from_bytes(data)["qualname"] == "tile::add"  # the good bytes still load


def test_checksummed_bytes_naming_an_unknown_kernel_are_refused():
    plan = K.add.trace(torch.randn(8), torch.randn(8))
    data = K.add.export_plans([plan])
    kid = struct.pack("<q", plan.launches[0].kernel)
    assert data.count(kid) == 1
    payload = data[HEADER:].replace(kid, struct.pack("<q", 77))
    with pytest.raises(ValueError, match=r"name kernel add_kernel \(triton kernel id 77\), which this process has not"):
        _C.plans_from_bytes(_reseal(payload))


def test_checksummed_bytes_with_a_bad_expression_are_refused():
    plan = K.add.trace(torch.randn(8), torch.randn(8))
    data = K.add.export_plans([plan])
    code = plan.guards[0].code  # [SIZE, 0, 0, SIZE, 1, 0, EQ]
    packed = struct.pack(f"<I{len(code)}q", len(code), *code)
    assert data.count(packed) == 1
    broken = struct.pack(f"<I{len(code)}q", len(code), *(code[:-1] + [999]))
    with pytest.raises(ValueError, match="bad opcode 999"):
        _C.plans_from_bytes(_reseal(data[HEADER:].replace(packed, broken)))


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


@tt.op("plan_format::scale")
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), factor, BLOCK=64)
    return out


def test_plans_are_disjoint_where_their_guards_show_it():
    Op = _plan.ExprOp

    def expr(*code):
        return _plan.Expr([int(c) for c in code], "guard")

    def plan(*guards, dtype=torch.float32, ndim=2, lists=0):
        return _plan.LaunchPlan([_plan.TensorGuard(0, dtype, ndim)], list(guards), 0, [], [], [],
                                num_list_tensors=lists)

    cols = (Op.SIZE, 0, 1)  # x.shape[1]
    small = expr(*cols, Op.CONST, 16, Op.LT)
    disjoint = _testing.plans_disjoint
    assert disjoint(plan(small), plan(expr(*cols, Op.CONST, 16, Op.LT, Op.NOT)))  # a branch and its negation
    assert disjoint(plan(expr(*cols, Op.CONST, 16, Op.LT, Op.NOT)), plan(small))
    assert disjoint(plan(small), plan(expr(*cols, Op.CONST, 16, Op.GE)))  # complementary comparisons
    assert disjoint(plan(expr(*cols, Op.CONST, 3, Op.EQ)), plan(expr(*cols, Op.CONST, 5, Op.EQ)))  # int() pins
    assert disjoint(plan(), plan(dtype=torch.float16)) and disjoint(plan(), plan(ndim=3))
    assert disjoint(plan(), plan(lists=2))
    # Not shown: an equal guard, overlapping ranges, other operands, a plan with fewer guards.
    assert not disjoint(plan(small), plan(small))
    assert not disjoint(plan(small), plan(expr(*cols, Op.CONST, 8, Op.GE)))
    assert not disjoint(plan(small), plan(expr(Op.SIZE, 0, 0, Op.CONST, 16, Op.GE)))
    assert not disjoint(plan(expr(*cols, Op.CONST, 3, Op.EQ)), plan(expr(*cols, Op.CONST, 3, Op.EQ)))
    assert not disjoint(plan(expr(*cols, Op.CONST, 3, Op.EQ)), plan(expr(*cols, Op.CONST, 5, Op.NE)))
    assert not disjoint(plan(), plan(small))


def test_kernel_and_config_ids_are_stable_across_processes():
    import os
    import subprocess
    import sys

    launch = scale.trace(torch.randn(10), 2.0).launches[0]
    script = ("import sys, torch; sys.path.insert(0, sys.argv[1]); from test_cpu_plan_format import scale; "
              "launch = scale.trace(torch.randn(10), 2.0).launches[0]; print(launch.kernel, launch.config)")
    env = {**os.environ, "TORCH_TILE_TEST_SUBPROCESS": "1"}
    out = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.split() == [str(launch.kernel), str(launch.config)]


def test_bool_lists_and_requires_grad_guards_round_trip():
    """An ATen step's bool[] argument (native_layer_norm_backward's output mask) and a guard on whether an argument
    requires a gradient survive bytes and the runtime's validation."""
    def body(grad: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
             w: torch.Tensor) -> torch.Tensor:
        dx, _, _ = torch.ops.aten.native_layer_norm_backward(grad, x, [x.shape[-1]], mean, rstd, w, None,
                                                             [True, False, False])
        return dx * 2 if w.requires_grad else dx

    op = tt.op("plan_format::bool_list", body, fallback=False)
    x, w = torch.randn(4, 8), torch.randn(8, requires_grad=True)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [8], w.detach(), None, 1e-5)
    args = (torch.randn(4, 8), x, mean, rstd, w)
    plan = op.trace(*args)
    assert [a.kind for a in plan.aten_steps[0].args][-1] == _plan.AtenArgKind.BOOL_LIST
    assert "w.requires_grad != 0" in [g.text for g in plan.guards]
    data = op.export_plans([plan])
    (read,) = _C.plans_from_bytes(data)["plans"]
    _same_plan(plan, read)
    assert op.export_plans([read]) == data
