"""CPU tests: launch plans, guards, trace errors and int64 expression semantics.

``op.trace(*args)`` runs the body once with symbolic stand-ins and returns the
plan the C++ runtime receives. Guards are checked two ways: by their text, and
by evaluating their bytecode with a small reference evaluator written here from
the opcode table (so a plan traced for one input is shown to accept the inputs
it should and to reject the others). Integer expressions are evaluated by the
C++ runtime through ``_testing.specialization_keys`` (a constexpr parameter's key
word is the expression's value) and compared with Python's own integer
arithmetic, including floor division/modulo signs and int64 overflow.
"""

import inspect
import operator

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile._plan import AllocKind, BindingKind, ExprOp as Op
from torch_tile import _testing

from plan_data import plan_data, tensor_guards

NS = "tt_cpu_trace"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# -- a reference evaluator for plan bytecode ------------------------------------------------------


_BINARY = {
    Op.ADD: operator.add, Op.SUB: operator.sub, Op.MUL: operator.mul, Op.FLOORDIV: operator.floordiv,
    Op.MOD: operator.mod, Op.MIN: min, Op.MAX: max, Op.BITAND: operator.and_, Op.BITOR: operator.or_,
    Op.BITXOR: operator.xor, Op.SHL: operator.lshift, Op.SHR: operator.rshift,
    Op.LT: lambda a, b: int(a < b), Op.LE: lambda a, b: int(a <= b), Op.EQ: lambda a, b: int(a == b),
    Op.NE: lambda a, b: int(a != b), Op.GT: lambda a, b: int(a > b), Op.GE: lambda a, b: int(a >= b),
}


def evaluate(code, args):
    """Evaluates postfix plan code over the call's arguments (tensors and ints)."""
    stack, pc = [], 0
    while pc < len(code):
        op = Op(code[pc])
        pc += 1
        if op == Op.CONST:
            stack.append(code[pc])
            pc += 1
        elif op == Op.SIZE:
            stack.append(args[code[pc]].size(code[pc + 1]))
            pc += 2
        elif op == Op.STRIDE:
            stack.append(args[code[pc]].stride(code[pc + 1]))
            pc += 2
        elif op == Op.NUMEL:
            stack.append(args[code[pc]].numel())
            pc += 1
        elif op == Op.SCALAR:
            stack.append(int(args[code[pc]]))
            pc += 1
        elif op == Op.NEG:
            stack.append(-stack.pop())
        elif op == Op.NOT:
            stack.append(int(stack.pop() == 0))
        elif op == Op.NEXT_POW2:
            stack.append(triton.next_power_of_2(stack.pop()))
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(_BINARY[op](a, b))
    assert len(stack) == 1
    return stack[0]


def guards_hold(plan, args) -> bool:
    for guard in plan.tensor_guards:
        if args[guard.arg].dtype != guard.dtype or args[guard.arg].dim() != guard.ndim:
            return False
    return all(evaluate(guard.code, args) != 0 for guard in plan.guards)


def guard_texts(plan):
    return [guard.text for guard in plan.guards]


def line_of(fn, needle: str) -> str:
    """'file:line' of the first line of fn's source containing needle."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if needle in line:
            return f"{inspect.getsourcefile(fn)}:{first + i}"
    raise AssertionError(f"{needle!r} not in {fn.__name__}")


# -- kernels and ops used below ---------------------------------------------------------------------


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


@triton.jit
def negate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, -tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def value_kernel(x_ptr, V: tl.constexpr):
    pass


@tt.op(f"{NS}::branch")
def branch(x: torch.Tensor) -> torch.Tensor:
    """Large inputs are doubled by one kernel, small ones negated by another."""
    out = torch.empty_like(x)
    n = x.numel()
    if x.shape[0] > 100:
        scale_kernel[(triton.cdiv(n, 64),)](x, out, n, FACTOR=2.0, BLOCK=64)
    else:
        negate_kernel[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
    return out


# -- the example ops' plans ------------------------------------------------------------------------


def test_softmax_guard_small():
    x = torch.randn(4, 100)
    plan = K.softmax.trace(x)
    texts = guard_texts(plan)
    assert "next_power_of_2(x.size(1)) < 2048" in texts
    assert "next_power_of_2(x.size(1)) >= 2048" not in texts
    assert guards_hold(plan, (x,))


def test_softmax_guard_large():
    x = torch.randn(2, 3000)
    plan = K.softmax.trace(x)
    texts = guard_texts(plan)
    assert "next_power_of_2(x.size(1)) >= 2048" in texts
    assert "next_power_of_2(x.size(1)) < 2048" not in texts
    assert guards_hold(plan, (x,))


@pytest.mark.parametrize("traced, accepted, rejected", [
    ((4, 100), [(1, 1), (7, 50), (1000, 1024), (3, 2047 // 2)], [(2, 1025), (2, 3000), (3, 4096)]),
    ((2, 3000), [(1, 1025), (5, 2048), (1, 10000)], [(1, 1), (4, 100), (8, 1024)]),
])
def test_softmax_plan_selects_by_branch(traced, accepted, rejected):
    """One plan per side of `4 if BLOCK < 2048 else 8`, independent of the other sizes."""
    plan = K.softmax.trace(torch.randn(traced))
    for shape in accepted:
        assert guards_hold(plan, (torch.empty(shape),)), shape
    for shape in rejected:
        assert not guards_hold(plan, (torch.empty(shape),)), shape
    # dtype and rank are guarded too
    assert not guards_hold(plan, (torch.empty(traced, dtype=torch.float16),))
    assert not guards_hold(plan, (torch.empty(traced[0], traced[1], 1),))


def test_softmax_sides_have_different_launch_configs():
    """num_warps is part of the launch config (key word 0); BLOCK is a constexpr expression."""
    small = K.softmax.trace(torch.randn(2, 1024)).launches[0]
    large = K.softmax.trace(torch.randn(2, 1025)).launches[0]
    assert small.kernel == large.kernel
    assert small.config != large.config
    block = small.bindings[-2]  # BLOCK, then the ACC dtype constexpr
    assert block.kind == BindingKind.CONSTEXPR and block.expr.text == "next_power_of_2(x.size(1))"


def test_softmax_plan_layout():
    x = torch.randn(3, 10)
    plan = K.softmax.trace(x)
    assert tensor_guards(plan) == [(0, torch.float32, 2)]
    (alloc,) = plan.allocs
    assert alloc.dtype == torch.float32 and not alloc.zero
    assert [e.text for e in alloc.shape] == ["x.size(0)", "x.size(1)"]
    assert plan.outputs == [1]
    (launch,) = plan.launches
    assert [e.text for e in launch.grid] == ["x.size(0)", "1", "1"]
    assert launch.site == line_of(K.softmax.fn, "softmax_kernel[")
    slots = [b.slot for b in launch.bindings[:2]]
    assert slots == [1, 0]  # out (allocated slot 1), then x


def test_add_plan_guards_equal_sizes():
    x, y = torch.randn(10), torch.randn(10)
    plan = K.add.trace(x, y)
    assert "x.size(0) == y.size(0)" in guard_texts(plan)
    assert tensor_guards(plan) == [(0, torch.float32, 1), (1, torch.float32, 1)]
    assert guards_hold(plan, (torch.empty(77), torch.empty(77)))
    assert not guards_hold(plan, (torch.empty(77), torch.empty(78)))
    assert not guards_hold(plan, (torch.empty(77), torch.empty(77, dtype=torch.float16)))


def test_add_plan_guards_equal_sizes_2d():
    x, y = torch.randn(3, 5), torch.randn(3, 5)
    texts = guard_texts(K.add.trace(x, y))
    assert "x.size(0) == y.size(0)" in texts and "x.size(1) == y.size(1)" in texts


def test_add_plan_is_size_generic():
    """No guard pins a size: the plan traced for 10 elements serves every contiguous size (but 1)."""
    plan = K.add.trace(torch.randn(10), torch.randn(10))
    for n in (2, 1000, 2**20 + 7):
        assert guards_hold(plan, (torch.empty(n), torch.empty(n)))
    noncontig = torch.empty(20)[::2]
    assert not guards_hold(plan, (noncontig, noncontig))


def test_add_plan_grid_and_bindings():
    x, y = torch.randn(3000), torch.randn(3000)
    plan = K.add.trace(x, y)
    (launch,) = plan.launches
    grid = [evaluate(e.code, (x, y)) for e in launch.grid]
    assert grid == [triton.cdiv(3000, 1024), 1, 1]
    # x, y, out (tensor slots), n (int expression), BLOCK (static constexpr)
    kinds = [b.kind for b in launch.bindings]
    assert [int(k) for k in kinds] == [0, 0, 0, 1, 5]
    assert kinds == [BindingKind.TENSOR] * 3 + [BindingKind.INT, BindingKind.STATIC]
    assert [b.slot for b in launch.bindings[:3]] == [0, 1, 2]
    assert launch.bindings[3].expr.text == "x.numel()"
    (alloc,) = plan.allocs
    assert int(alloc.kind) == 1 and alloc.kind == AllocKind.EMPTY_LIKE and alloc.like_slot == 0  # empty_like(x)
    assert plan.outputs == [2]


def test_add_inplace_plan_allocates_nothing():
    plan = K.add_.trace(torch.randn(10), torch.randn(10))
    assert plan.allocs == [] and plan.outputs == []
    (launch,) = plan.launches
    assert [b.slot for b in launch.bindings[:3]] == [0, 1, 0]  # out_ptr is x


def test_layer_norm_plan():
    x, w, b = torch.randn(4, 300), torch.randn(300), torch.randn(300)
    plan = K.layer_norm.trace(x, w, b, 1e-5)
    assert [a.dtype for a in plan.allocs] == [torch.float32] * 3
    assert plan.outputs == [4, 5, 6]
    (launch,) = plan.launches
    eps = launch.bindings[9]
    # FLOAT from argument 3: the value is not baked into the plan
    assert eps.kind == BindingKind.FLOAT and eps.slot == 3 and eps.float_value == 0.0
    # num_warps = min(max(BLOCK // 256, 1), 8): guards keep the plan within one num_warps value
    assert guards_hold(plan, (torch.empty(2, 260), torch.empty(260), torch.empty(260), 0.5))
    assert not guards_hold(plan, (torch.empty(2, 1000), torch.empty(1000), torch.empty(1000), 0.5))
    assert not guards_hold(plan, (torch.empty(2, 260), torch.empty(261), torch.empty(260), 0.5))


def test_trace_is_deterministic():
    x = torch.randn(6, 300)
    assert plan_data(K.softmax.trace(x)) == plan_data(K.softmax.trace(x))
    a, b = torch.randn(33, 17), torch.randn(17, 9)
    assert plan_data(K.matmul.trace(a, b)) == plan_data(K.matmul.trace(a, b))


def test_trace_works_on_meta_tensors():
    x = torch.empty(5, 3000, device="meta")
    assert plan_data(K.softmax.trace(x)) == plan_data(K.softmax.trace(torch.empty(5, 3000)))


def test_matmul_plan_branches_on_dtype_not_size():
    a32, b32 = torch.randn(8, 8), torch.randn(8, 8)
    a16, b16 = a32.half(), b32.half()
    p32, p16 = K.matmul.trace(a32, b32), K.matmul.trace(a16, b16)
    assert p32.launches[0].config != p16.launches[0].config
    assert guards_hold(p32, (torch.empty(100, 3), torch.empty(3, 50)))
    assert not guards_hold(p32, (torch.empty(100, 3), torch.empty(4, 50)))  # a.shape[1] != b.shape[0]


# -- a body that branches on a size -------------------------------------------------------------------


def test_branch_plans_differ():
    small = branch.trace(torch.randn(50))
    large = branch.trace(torch.randn(150))
    assert guard_texts(small) == ["x.size(0) <= 100"]
    assert guard_texts(large) == ["x.size(0) > 100"]
    (ls,), (ll,) = small.launches, large.launches
    assert ls.kernel != ll.kernel
    assert ls.site == line_of(branch.fn, "negate_kernel[")
    assert ll.site == line_of(branch.fn, "scale_kernel[")
    # The boundary belongs to the small side.
    assert guards_hold(small, (torch.empty(100),)) and not guards_hold(large, (torch.empty(100),))
    assert guards_hold(large, (torch.empty(101),)) and not guards_hold(small, (torch.empty(101),))


@pytest.mark.parametrize("n", [1, 50, 100, 101, 150, 1000])
def test_branch_computes_on_both_sides(n):
    x = torch.randn(n)
    expected = x * 2 if n > 100 else -x
    torch.testing.assert_close(torch.ops.tt_cpu_trace.branch(x), expected, rtol=0, atol=0)


# -- guards recorded by explicit specialization ------------------------------------------------------


@triton.jit
def copy_block_kernel(x_ptr, out_ptr, K: tl.constexpr):
    offs = tl.arange(0, K)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@tt.op(f"{NS}::pinned")
def pinned(x: torch.Tensor) -> torch.Tensor:
    """Specializes on the size explicitly (int()), then allocates from the same size."""
    n = x.size(0)
    k = int(n)
    out = torch.empty(n, device=x.device)
    copy_block_kernel[(1,)](x, out, K=k)
    return out


@tt.op(f"{NS}::pinned_like")
def pinned_like(x: torch.Tensor) -> torch.Tensor:
    n = x.size(0)
    k = int(n)
    out = torch.empty_like(x)
    copy_block_kernel[(1,)](x, out, K=k)
    return out


def test_explicit_int_records_a_guard():
    plan = pinned_like.trace(torch.randn(8))
    assert "x.size(0) == 8" in guard_texts(plan)
    assert not guards_hold(plan, (torch.randn(16),))


def test_explicit_int_guard_survives_a_later_allocation():
    plan = pinned.trace(torch.randn(8))
    assert "x.size(0) == 8" in guard_texts(plan)
    assert not guards_hold(plan, (torch.randn(16),))


def test_allocation_sizes_do_not_pin_the_plan():
    """torch's argument parser converts shape entries with __index__; those conversions are not guards."""

    @tt.op(f"{NS}::alloc_forms")
    def alloc_forms(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n, m = x.shape
        a = torch.empty(n, m * 2, device=x.device)
        b = torch.zeros((n + 1,), dtype=torch.int32, device=x.device)
        c = torch.empty_like(x, dtype=torch.float16)
        return a, b, c

    plan = alloc_forms.trace(torch.randn(3, 5))
    assert guard_texts(plan) == []
    shapes = [[e.text for e in alloc.shape] for alloc in plan.allocs]
    assert shapes == [["x.size(0)", "(x.size(1) * 2)"], ["(x.size(0) + 1)"], []]
    assert [a.zero for a in plan.allocs] == [False, True, False]
    assert [a.dtype for a in plan.allocs] == [torch.float32, torch.int32, torch.float16]
    assert [a.like_slot for a in plan.allocs] == [-1, -1, 0]
    # The CPU path computes the same shapes.
    a, b, c = torch.ops.tt_cpu_trace.alloc_forms(torch.randn(4, 6))
    assert (a.shape, b.shape, c.shape, c.dtype) == ((4, 12), (5,), (4, 6), torch.float16)
    assert torch.equal(b, torch.zeros(5, dtype=torch.int32))


@tt.op(f"{NS}::new_empty_body")
def new_empty_body(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty((x.size(1), x.size(0)))


@tt.op(f"{NS}::new_zeros_body")
def new_zeros_body(x: torch.Tensor) -> torch.Tensor:
    return x.new_zeros(x.numel(), dtype=torch.int32)


def test_new_empty_and_new_zeros_work_on_cpu():
    assert new_empty_body(torch.randn(2, 3)).shape == (3, 2)
    assert torch.equal(new_zeros_body(torch.randn(2, 3)), torch.zeros(6, dtype=torch.int32))


@pytest.mark.parametrize("op, shape, dtype, zero", [
    (new_empty_body, ["x.size(1)", "x.size(0)"], torch.float32, False),
    (new_zeros_body, ["x.numel()"], torch.int32, True),
], ids=["new_empty", "new_zeros"])
def test_new_empty_and_new_zeros_trace(op, shape, dtype, zero):
    plan = op.trace(torch.randn(2, 3))
    (alloc,) = plan.allocs
    assert [e.text for e in alloc.shape] == shape
    assert alloc.dtype == dtype and alloc.zero == zero
    assert guard_texts(plan) == []


# -- what a plan cannot hold ------------------------------------------------------------------------------


@tt.op(f"{NS}::reads_item")
def reads_item(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    x.sum().item()
    return out


@tt.op(f"{NS}::address_arith")
def address_arith(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    x.data_ptr() * 2
    return out


@tt.op(f"{NS}::other_device_copy")
def other_device_copy(x: torch.Tensor) -> torch.Tensor:
    return x.to("meta")


@tt.op(f"{NS}::no_device")
def no_device(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape[0])


@tt.op(f"{NS}::other_device")
def other_device(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape[0], device="cuda")


_GLOBAL_TENSOR = torch.zeros(16)


class _PointerObject:
    """What Triton's launcher takes as a pointer besides a tensor: an object with data_ptr() and dtype."""

    def __init__(self, address, dtype: torch.dtype):
        self.address, self.dtype = address, dtype

    def data_ptr(self):
        return self.address


@tt.op(f"{NS}::foreign_pointer")
def foreign_pointer(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    negate_kernel[(1,)](_PointerObject(_GLOBAL_TENSOR.data_ptr(), torch.float32), out, 16, BLOCK=16)
    return out


@tt.op(f"{NS}::wider_pointer")
def wider_pointer(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    negate_kernel[(1,)](_PointerObject(x.data_ptr(), torch.float64), out, 8, BLOCK=16)
    return out


@tt.op(f"{NS}::pointer_between_elements")
def pointer_between_elements(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    negate_kernel[(1,)](_PointerObject(x.data_ptr() + 2, torch.float32), out, 8, BLOCK=16)
    return out


@pytest.mark.parametrize(
    "op, args, needle, message",
    [
        (reads_item, (), ".item()", "reads a torch.float32 value from the tensors' data"),
        (address_arith, (), "x.data_ptr() * 2", "is an address: a launch plan takes it as a value or checks its"),
        (other_device_copy, (), "x.to(", "argument 'device' of `aten._to_copy.default` is meta"),
        (no_device, (), "torch.empty", "allocations in an op body need device="),
        (other_device, (), "torch.empty", "allocation on cuda, but the op's tensors are on cpu"),
        (foreign_pointer, (), "negate_kernel[", "memory the op did not take or allocate"),
        (wider_pointer, (), "negate_kernel[", "receives a torch.float64 pointer into a torch.float32 tensor"),
        (pointer_between_elements, (), "negate_kernel[", "pointer 2 bytes into a tensor: not a whole number"),
    ],
    ids=lambda v: v.name if isinstance(v, tt.TileOp) else None,
)
def test_trace_errors_name_op_and_line(op, args, needle, message):
    with pytest.raises(tt.TraceError) as info:
        op.trace(torch.randn(16), *args)
    text = str(info.value)
    assert text.startswith(f"{op.qualname}: {line_of(op.fn, needle)}: ")
    assert message in text


def test_an_op_returns_a_copy_of_its_written_input():
    @tt.op(f"{NS}::returns_input", mutates_args=("x",))
    def returns_input(x: torch.Tensor) -> torch.Tensor:
        negate_kernel[(1,)](x, x, x.numel(), BLOCK=16)
        return x

    x = torch.randn(4)
    expected = -x
    out = returns_input(x)
    assert out.data_ptr() != x.data_ptr()  # the schema declares no alias
    torch.testing.assert_close(x, expected)
    torch.testing.assert_close(out, expected)
    assert returns_input.trace(x).outputs == [0]  # the argument's slot, copied when returned


def test_returning_the_wrong_number_of_outputs_is_refused():
    @tt.op(f"{NS}::returns_two", schema="(Tensor x) -> Tensor")
    def returns_two(x):
        return torch.empty_like(x), torch.empty_like(x)

    message = rf"{NS}::returns_two: the body returned 2 value\(s\); the schema declares 1"
    with pytest.raises(tt.TraceError, match=message):
        returns_two.trace(torch.randn(4))


def test_an_op_returns_one_tensor_twice_as_two():
    @tt.op(f"{NS}::returns_twice", schema="(Tensor x) -> (Tensor, Tensor)")
    def returns_twice(x):
        out = torch.empty_like(x)
        negate_kernel[(1,)](x, out, x.numel(), BLOCK=16)
        return out, out

    x = torch.randn(4)
    a, b = returns_twice(x)
    assert a.data_ptr() != b.data_ptr()
    torch.testing.assert_close(a, -x)
    torch.testing.assert_close(b, -x)
    plan = returns_twice.trace(x)
    assert plan.outputs[0] == plan.outputs[1]


def test_op_without_tensor_argument_cannot_be_traced():
    @tt.op(f"{NS}::no_tensors", schema="(int n) -> Tensor")
    def no_tensors(n):
        return torch.empty(n, device="cpu")

    with pytest.raises(tt.TraceError, match=f"{NS}::no_tensors: the op needs at least one tensor argument"):
        no_tensors.trace(3)


def test_reserved_launch_options_refused():
    @tt.op(f"{NS}::stream_option")
    def stream_option(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        negate_kernel[(1,)](x, out, 4, BLOCK=16, stream=0)
        return out

    with pytest.raises(tt.TraceError, match=r"launch option\(s\) \['stream'\] are chosen by torch_tile"):
        stream_option.trace(torch.randn(4))


# -- integer expressions: C++ evaluation against Python's ints -----------------------------------------

# Each expression becomes the constexpr V of its own op; the key word of a
# constexpr is its value (two's complement), so the C++ evaluator's result can
# be read back exactly for any argument value.
EXPRESSIONS = {
    "add": lambda n: n + 7,
    "sub_mul": lambda n: n * 3 - 5,
    "floordiv": lambda n: n // 16,
    "floordiv_neg": lambda n: n // -16,
    "neg_floordiv": lambda n: (-n) // 7,
    "mod": lambda n: n % 16,
    "mod_neg": lambda n: n % -16,
    "rmod": lambda n: 100 % (n | 1),
    "shl": lambda n: n << 3,
    "shr": lambda n: n >> 2,
    "and_or_xor": lambda n: ((n & 0xFF) | 0x100) ^ 0x55,
    "sym_min": lambda n: tt.sym_min(n, 10),
    "sym_max": lambda n: tt.sym_max(-n, 10),
    "cdiv": lambda n: triton.cdiv(n, 64),
    "square": lambda n: n * n,
}
VALUES = [INT64_MIN, -(2**62) - 1, -33, -17, -16, -1, 0, 1, 15, 16, 17, 2**31, 2**40 + 3, 2**62, INT64_MAX]


def _expression_op(name, fn):
    def body(x, n):
        value_kernel[(1,)](x, V=fn(n))

    return tt.op(f"{NS}::expr_{name}", body, schema="(Tensor x, int n) -> ()")


EXPRESSION_OPS = {name: _expression_op(name, fn) for name, fn in EXPRESSIONS.items()}


def _signed(word):
    return word - 2**64 if word >= 2**63 else word


def _int64(value):
    if not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError(value)
    return Checked(value)


def _unwrap(v):
    return v.value if isinstance(v, Checked) else v


class Checked:
    """A Python int whose every operation must stay within int64, like the plan's arithmetic
    (intermediate results included: cdiv(INT64_MAX, 64) overflows in `n + 63`)."""

    def __init__(self, value):
        self.value = value

    def __add__(self, o): return _int64(self.value + _unwrap(o))
    def __radd__(self, o): return _int64(_unwrap(o) + self.value)
    def __sub__(self, o): return _int64(self.value - _unwrap(o))
    def __rsub__(self, o): return _int64(_unwrap(o) - self.value)
    def __mul__(self, o): return _int64(self.value * _unwrap(o))
    def __rmul__(self, o): return _int64(_unwrap(o) * self.value)
    def __floordiv__(self, o): return _int64(self.value // _unwrap(o))
    def __rfloordiv__(self, o): return _int64(_unwrap(o) // self.value)
    def __mod__(self, o): return _int64(self.value % _unwrap(o))
    def __rmod__(self, o): return _int64(_unwrap(o) % self.value)
    def __lshift__(self, o): return _int64(self.value << _unwrap(o))
    def __rshift__(self, o): return _int64(self.value >> _unwrap(o))
    def __and__(self, o): return _int64(self.value & _unwrap(o))
    def __or__(self, o): return _int64(self.value | _unwrap(o))
    def __xor__(self, o): return _int64(self.value ^ _unwrap(o))
    def __neg__(self): return _int64(-self.value)
    def __lt__(self, o): return self.value < _unwrap(o)
    def __le__(self, o): return self.value <= _unwrap(o)
    def __gt__(self, o): return self.value > _unwrap(o)
    def __ge__(self, o): return self.value >= _unwrap(o)


def _python_value(fn, n):
    """The expression's value on Python ints, or None where some step leaves int64."""
    try:
        return _unwrap(fn(Checked(n)))
    except OverflowError:
        return None


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_cpp_expressions_match_python(name):
    op, fn = EXPRESSION_OPS[name], EXPRESSIONS[name]
    x = torch.empty(1)
    plan = op.trace(x, 3)  # traced once; the plan is evaluated in C++ for every value
    assert plan.guards == []
    for n in VALUES:
        expected = _python_value(fn, n)
        if expected is None:
            with pytest.raises(ValueError, match=r"integer overflow \(int64\) while evaluating"):
                _testing.specialization_keys(plan, (x, n))
            continue
        (words,) = _testing.specialization_keys(plan, (x, n))
        assert _signed(words[2]) == expected, (name, n)


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_python_trace_overflow_matches(name):
    """The tracer computes the same values and refuses the same int64 overflows."""
    op, fn = EXPRESSION_OPS[name], EXPRESSIONS[name]
    x = torch.empty(1)
    for n in VALUES:
        expected = _python_value(fn, n)
        if expected is None:
            with pytest.raises(OverflowError, match="does not fit in int64"):
                op.trace(x, n)
            continue
        plan = op.trace(x, n)
        (words,) = _testing.specialization_keys(plan, (x, n))
        assert _signed(words[2]) == expected


@triton.jit
def pow2_kernel(x_ptr, BLOCK: tl.constexpr):
    pass


@tt.op(f"{NS}::pow2")
def pow2(x: torch.Tensor) -> None:
    pow2_kernel[(1,)](x, BLOCK=triton.next_power_of_2(x.size(0)))


@tt.op(f"{NS}::numel_arg")
def numel_arg(x: torch.Tensor) -> None:
    value_kernel[(1,)](x, V=x.numel() * 2)


@pytest.mark.parametrize("n", [1, 2, 3, 1000, 2**31 + 1, 2**62 - 1, 2**62])
def test_next_power_of_2_in_cpp(n):
    plan = pow2.trace(torch.empty(5))
    big = torch.empty(1).expand(n)  # stride 0: any size without memory
    (words,) = _testing.specialization_keys(plan, (big,))
    assert words[2] == triton.next_power_of_2(n)


def test_next_power_of_2_overflow():
    """2**62 + 1 rounds up to 2**63, which int64 cannot hold: both evaluators refuse it."""
    big = torch.empty(1).expand(2**62 + 1)
    plan = pow2.trace(torch.empty(5))
    message = r"integer overflow \(int64\) while evaluating `next_power_of_2\(x.size\(0\)\)`"
    with pytest.raises(ValueError, match=message):
        _testing.specialization_keys(plan, (big,))
    with pytest.raises(OverflowError, match="does not fit in int64"):
        pow2.trace(big)


def test_numel_overflow():
    """numel of a stride-0 2**31 x 2**31 tensor is 2**62; twice that leaves int64 (C++ and tracer refuse)."""
    plan = numel_arg.trace(torch.empty(3, 3))
    fits = torch.empty(1, 1).expand(2**31, 2**30)
    (words,) = _testing.specialization_keys(plan, (fits,))
    assert words[2] == 2**62
    huge = torch.empty(1, 1).expand(2**31, 2**31)
    with pytest.raises(ValueError, match=r"integer overflow \(int64\) while evaluating `\(x.numel\(\) \* 2\)`"):
        _testing.specialization_keys(plan, (huge,))
    with pytest.raises(OverflowError, match="does not fit in int64"):
        numel_arg.trace(huge)


def test_scalar_overflow_in_cpp():
    """A plan traced with a small scalar refuses, in C++, a later value that overflows."""
    op = EXPRESSION_OPS["sub_mul"]
    x = torch.empty(1)
    plan = op.trace(x, 3)
    with pytest.raises(ValueError, match=r"integer overflow \(int64\) while evaluating `\(\(n \* 3\) - 5\)`"):
        _testing.specialization_keys(plan, (x, 2**62))
    (words,) = _testing.specialization_keys(plan, (x, 2**61))
    assert words[2] == 3 * 2**61 - 5


def test_trace_refuses_arguments_the_schema_does_not_take():
    x = torch.randn(8)
    for args, kwargs, said in (((x, x, x), {}, "got 3 positional"), ((), {"y": x}, r"missing: x\)"),
                               ((x, x), {"z": 1}, r"keyword\(s\) \['z'\]")):
        with pytest.raises(TypeError, match=rf"tile::add: expected the arguments of \(Tensor x, Tensor y\).*{said}"):
            K.add.trace(*args, **kwargs)
