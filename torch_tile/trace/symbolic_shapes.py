"""torch's symbolic shapes behind the tracer's stand-ins.

What ATen does to a body's tensors (views, copies, arithmetic) is computed by
torch itself: each stand-in has a *shadow*, a FakeTensor whose sizes and
strides are SymInts of a ShapeEnv, and ATen's own meta functions run on the
shadows. The plan's expressions and ShapeEnv's sympy expressions are
translated both ways here: a plan atom (``SIZE slot d``, ``STRIDE slot d``,
``SCALAR i``) is one ShapeEnv symbol, and every guard ShapeEnv records while
ATen decides something about sizes (a view that must be viewable, a tensor that
is already contiguous) becomes a plan guard.
"""

from __future__ import annotations

import weakref
from typing import Any, Optional

import sympy
from sympy.printing.str import StrPrinter
import torch
from torch._dynamo.source import ConstantSource
from torch._guards import SLoc
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental import symbolic_shapes
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv
from torch.utils._sympy import functions as symfn

from .expr import INT64_MAX, INT64_MIN, Op, SymbolicInt


class _PythonStylePrinter(StrPrinter):
    """sympy's text with Python's operators: ``==`` and ``!=`` for Eq and Ne, ``%`` for torch's PythonMod."""

    def _print_Relational(self, expr) -> str:
        return f"{self._print(expr.lhs)} {expr.rel_op} {self._print(expr.rhs)}"  # a comparison binds loosest

    def _print_PythonMod(self, expr) -> str:
        return f"({self._print(expr.args[0])} % {self._print(expr.args[1])})"


class Untranslatable(Exception):
    """A sympy expression with no plan bytecode (or the reverse)."""


_ATOMS = (Op.SIZE, Op.STRIDE, Op.SCALAR, Op.LIST_ITEM, Op.READ)

_SYMPY_BINARY = {
    Op.ADD: lambda a, b: a + b,
    Op.SUB: lambda a, b: a - b,
    Op.MUL: lambda a, b: a * b,
    Op.FLOORDIV: symfn.FloorDiv,
    Op.MOD: symfn.PythonMod,
    Op.MIN: symfn.Min,
    Op.MAX: symfn.Max,
}

# Operators whose operands may come in any order (sympy sorts them); torch's bitwise functions are those SymInts
# make of ``&``, ``|``, ``^`` (Triton's next_power_of_2 on a SymInt is a chain of ``|`` and shifts).
_COMMUTATIVE = {
    sympy.Add: Op.ADD, sympy.Mul: Op.MUL, sympy.And: Op.BITAND, sympy.Or: Op.BITOR, symfn.Max: Op.MAX,
    symfn.Min: Op.MIN, symfn.BitwiseFn_bitwise_and: Op.BITAND, symfn.BitwiseFn_bitwise_or: Op.BITOR,
    symfn.BitwiseFn_bitwise_xor: Op.BITXOR,
}

_RELATIONS = {
    sympy.Eq: Op.EQ, sympy.Ne: Op.NE, sympy.StrictLessThan: Op.LT, sympy.LessThan: Op.LE,
    sympy.StrictGreaterThan: Op.GT, sympy.GreaterThan: Op.GE,
}


_NEXT_POWER_OF_2 = sympy.Function("next_power_of_2")  # a name for guard texts only


def next_power_of_2_argument(expr: sympy.Basic) -> Optional[sympy.Basic]:
    """``m`` where ``expr`` is ``triton.next_power_of_2(m)`` as Triton computes it on a SymInt (``n = m - 1``, then
    ``n |= n >> k`` for k = 1, 2, 4, ..., 32, then ``n + 1``), else None: the plan's one NEXT_POW2 opcode in place of
    the expression's tree, which repeats ``n`` at every step (its size doubles with each ``|``)."""
    if not (isinstance(expr, sympy.Add) and len(expr.args) == 2 and sympy.Integer(1) in expr.args):
        return None
    n = expr.args[1] if expr.args[0] == 1 else expr.args[0]
    for shift in (32, 16, 8, 4, 2, 1):
        if not isinstance(n, symfn.BitwiseFn_bitwise_or):
            return None
        a, b = n.args
        if b == symfn.FloorDiv(a, 2 ** shift):
            n = a
        elif a == symfn.FloorDiv(b, 2 ** shift):
            n = b
        else:
            return None
    return n + 1


class _TraceShapeEnv(ShapeEnv):
    """A ShapeEnv that does not look for the "user frame" of each symbol and guard.

    ShapeEnv records a source location for every symbol and guard by walking the
    stack past the files ``uninteresting_files()`` lists, whose first call imports
    torch.export, AOTAutograd's partitioners (networkx), Inductor's sizevars and
    Dynamo's guards: half a second or more on the first trace of a process, for a
    location torch_tile never shows (its errors name the op body itself)."""

    def _get_stack_summary(self, is_debug: bool = False, framework_loc: Optional[str] = None):
        return SLoc(framework_loc or "torch_tile trace", None), ""


# torch's process-wide memo tables that a ShapeEnv fills and nothing empties: the caches of ShapeEnv's methods,
# keyed by the instance (they keep every ShapeEnv alive: torch makes a few, a tracer one per trace, ~100 KB
# each), and the module's unbounded ones (the static evaluator's is keyed by each symbol's value: an entry per
# size). They only memoize, so emptying them costs torch a recomputation, never a result.
_TORCH_MEMO_TABLES = tuple(
    [cached for cls in ShapeEnv.__mro__ for cached in vars(cls).values() if hasattr(cached, "cache_clear")]
    + [cached for cached in vars(symbolic_shapes).values()
       if hasattr(cached, "cache_parameters") and cached.cache_parameters()["maxsize"] is None])


def _forget_traces() -> None:
    """Empties torch's memo tables of what the traces put there (when a trace's shapes die)."""
    for table in _TORCH_MEMO_TABLES:
        table.cache_clear()


class SymbolicShapes:
    """One trace's ShapeEnv, FakeTensorMode and the atom <-> symbol maps."""

    def __init__(self, sink):
        self.sink = sink  # the tracer: guards and errors go there
        self.env = _TraceShapeEnv(duck_shape=False, specialize_zero_one=False)
        weakref.finalize(self, _forget_traces)  # a process tracing per call keeps no memory per trace
        self.mode = FakeTensorMode(shape_env=self.env, allow_non_fake_inputs=False)
        self._symbol_of: dict[tuple[int, ...], sympy.Symbol] = {}
        self._atom_of: dict[sympy.Symbol, tuple[int, ...]] = {}
        self._named: dict[sympy.Symbol, sympy.Symbol] = {}  # for messages: s12 -> x.size(0)
        self._guards_seen = 0

    # -- plan bytecode -> sympy -------------------------------------------------------------
    def _symbol(self, atom: tuple[int, ...], value: int) -> sympy.Symbol:
        sym = self._symbol_of.get(atom)
        if sym is None:
            # No assumed range (ShapeEnv's "positive" would assume > 1 without a
            # guard): whatever ATen asks of a size becomes a guard of the plan.
            sym = self.env.create_symbol(value, ConstantSource(f"tile_atom_{'_'.join(map(str, atom))}"),
                                         dynamic_dim=DimDynamic.DYNAMIC, positive=None,
                                         do_not_specialize_zero_one=True)
            if not isinstance(sym, sympy.Symbol):
                raise Untranslatable(f"ShapeEnv specialised {atom}")
            self._symbol_of[atom] = sym
            self._atom_of[sym] = atom
            self._named[sym] = sympy.Symbol(self.sink.atom_name(atom))
        return sym

    def _atom(self, atom: tuple[int, ...]) -> sympy.Expr:
        value = self.sink.resolve_atom(atom)
        if isinstance(value, SymbolicInt):  # a tensor the plan made: its size over the arguments
            return self.to_sympy(value)
        if not isinstance(value, int):
            raise Untranslatable(f"{atom} is not an integer")
        return self._symbol(atom, value)

    def to_sympy(self, value: SymbolicInt) -> sympy.Expr:
        """The sympy expression of a symbolic int (Untranslatable when it uses an
        operation ShapeEnv does not model, such as next_power_of_2)."""
        code, stack, pc = value.code, [], 0
        while pc < len(code):
            op = Op(code[pc])
            if op == Op.CONST:
                stack.append(sympy.Integer(code[pc + 1]))
                pc += 2
            elif op in _ATOMS:
                width = 3 if op in (Op.SIZE, Op.STRIDE, Op.LIST_ITEM) else 2
                stack.append(self._atom(tuple(int(c) for c in code[pc:pc + width])))
                pc += width
            elif op == Op.NUMEL:
                slot = int(code[pc + 1])
                rank = len(self.sink.shadow_dims_of_slot(slot)[0])
                stack.append(sympy.Mul(*[self._atom((int(Op.SIZE), slot, d)) for d in range(rank)]))
                pc += 2
            elif op == Op.NEG:
                stack.append(-stack.pop())
                pc += 1
            elif op in _SYMPY_BINARY:
                b, a = stack.pop(), stack.pop()
                stack.append(_SYMPY_BINARY[op](a, b))
                pc += 1
            else:
                raise Untranslatable(f"`{value.text}` uses {op.name}")
        (result,) = stack
        return result

    def symint(self, value):
        """A SymInt for a symbolic int (its value, guarded, where it has no
        sympy form); plain ints unchanged."""
        if not isinstance(value, SymbolicInt):
            return value
        if value.is_bool:
            return bool(value)
        try:
            expr = self.to_sympy(value)
        except Untranslatable:
            return value.specialize()
        if isinstance(expr, sympy.Integer):
            return int(expr)
        return self.env.create_symintnode(expr, hint=value.value)

    # -- sympy -> plan bytecode -------------------------------------------------------------
    def to_code(self, expr: sympy.Basic) -> tuple[int, ...]:
        """Bytecode of a sympy expression over this trace's symbols."""
        if isinstance(expr, (bool, sympy.logic.boolalg.BooleanAtom)):
            return (Op.CONST, int(bool(expr)))
        if isinstance(expr, sympy.Integer) or isinstance(expr, int):
            v = int(expr)
            if not INT64_MIN <= v <= INT64_MAX:
                raise Untranslatable(f"{v} does not fit in int64")
            return (Op.CONST, v)
        if isinstance(expr, sympy.Symbol):
            atom = self._atom_of.get(expr)
            if atom is None:
                raise Untranslatable(f"symbol {expr} is not an argument's size, stride or value")
            return atom
        power_of_2_of = next_power_of_2_argument(expr)
        if power_of_2_of is not None:
            return self.to_code(power_of_2_of) + (Op.NEXT_POW2,)
        if isinstance(expr, tuple(_COMMUTATIVE)):
            op = _COMMUTATIVE[type(expr)]
            if isinstance(expr, sympy.Mul) and any(isinstance(a, sympy.Rational) and not a.is_Integer
                                                   for a in expr.args):
                raise Untranslatable(f"{expr} is not an integer expression")
            args = sorted(expr.args, key=sympy.default_sort_key)
            code = self.to_code(args[0])
            for a in args[1:]:
                code = code + self.to_code(a) + (op,)
            return code
        if isinstance(expr, (symfn.FloorDiv, symfn.CleanDiv)):
            return self.to_code(expr.args[0]) + self.to_code(expr.args[1]) + (Op.FLOORDIV,)
        if isinstance(expr, (symfn.PythonMod, symfn.Mod, sympy.Mod)):
            return self.to_code(expr.args[0]) + self.to_code(expr.args[1]) + (Op.MOD,)
        if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and 0 < int(expr.exp) <= 8:
            base = self.to_code(expr.base)
            code = base
            for _ in range(int(expr.exp) - 1):
                code = code + base + (Op.MUL,)
            return code
        if isinstance(expr, symfn.PowByNatural):
            return self.to_code(sympy.Pow(expr.args[0], expr.args[1]))
        if isinstance(expr, sympy.Not):
            return self.to_code(expr.args[0]) + (Op.NOT,)
        for relation, op in _RELATIONS.items():
            if isinstance(expr, relation):
                return self.to_code(expr.lhs) + self.to_code(expr.rhs) + (op,)
        raise Untranslatable(f"{expr} ({type(expr).__name__})")

    def text(self, expr) -> str:
        """A sympy expression with the arguments' names (``x.size(0)``) in place of symbols, in Python's operators
        (``x.size(0) != 0``, not ``Ne(x.size(0), 0)``), as the tracer's own guards read."""
        if not isinstance(expr, sympy.Basic):
            return str(expr)
        expr = expr.replace(lambda e: next_power_of_2_argument(e) is not None,  # as the body wrote it
                            lambda e: _NEXT_POWER_OF_2(next_power_of_2_argument(e)))
        return _PythonStylePrinter().doprint(expr.xreplace(self._named))

    def symbolic_int(self, value, text: str) -> Any:
        """A SymbolicInt for an int or SymInt that ATen computed."""
        if isinstance(value, torch.SymInt):
            expr = value.node.expr
            hint = value.node.hint
            try:
                code = self.to_code(expr)
            except Untranslatable as e:
                raise self.sink.error(f"{text} = {expr} cannot be expressed in a launch plan ({e})") from None
            return SymbolicInt(code, self.text(expr), int(hint), self.sink)
        return value

    # -- guards -------------------------------------------------------------------------------
    def take_guards(self) -> None:
        """Hands the guards ShapeEnv recorded since the last call to the tracer."""
        guards = self.env.guards[self._guards_seen:]
        self._guards_seen = len(self.env.guards)
        for g in guards:
            if self._always_true(g.expr):
                continue
            try:
                code = self.to_code(g.expr)
            except Untranslatable as e:
                raise self.sink.error(f"torch made the guard `{self.text(g.expr)}`, which a launch plan cannot "
                                      f"hold ({e})") from None
            self.sink.add_guard(code, self.text(g.expr))

    def _always_true(self, expr) -> bool:
        """``size >= 0`` and ``stride >= 0``: true of every tensor, no guard needed."""
        if isinstance(expr, sympy.GreaterThan) and expr.rhs == 0 and isinstance(expr.lhs, sympy.Symbol):
            atom = self._atom_of.get(expr.lhs)
            return atom is not None and Op(atom[0]) in (Op.SIZE, Op.STRIDE)
        return False

    def fake_tensor(self, sizes, strides, dtype: torch.dtype, device: torch.device):
        """A shadow: a FakeTensor with these (symbolic) sizes and strides."""
        with torch._C.DisableTorchFunction(), self.mode:  # the tracer's own call, not the body's
            return torch.empty_strided([self.symint(s) for s in sizes], [self.symint(s) for s in strides],
                                       dtype=dtype, device=device)


def is_unbacked(value: Any) -> bool:
    """A SymInt without a hint (a data-dependent size such as nonzero's)."""
    return isinstance(value, torch.SymInt) and value.node.hint is None


def optional_hint(value) -> Optional[int]:
    return value.node.hint if isinstance(value, torch.SymInt) else value
