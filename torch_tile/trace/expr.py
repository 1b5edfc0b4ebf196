"""Symbolic integers of the tracer and their postfix bytecode.

A ``SymbolicInt`` carries an expression over the call's tensor metadata and
integer arguments together with its concrete value for the call being traced
(like a SymInt with a hint). Arithmetic stays symbolic; turning one into a
Python ``bool``/``int`` records a guard, as Dynamo does. The opcodes are the
C++ runtime's (``_plan.ExprOp``).
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Optional

import torch

from .._errors import TraceZeroDivisionError
from .._plan import ExprOp
from .state import current_tracer


# The opcodes, from the C++ runtime (csrc/runtime/plan/expr.h).
Op = ExprOp


INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2, including its 0 for n <= 0."""
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


_BINARY: dict[Op, tuple[str, Callable[[int, int], int]]] = {
    Op.ADD: ("+", lambda a, b: a + b),
    Op.SUB: ("-", lambda a, b: a - b),
    Op.MUL: ("*", lambda a, b: a * b),
    Op.FLOORDIV: ("//", lambda a, b: a // b),
    Op.MOD: ("%", lambda a, b: a % b),
    Op.BITAND: ("&", lambda a, b: a & b),
    Op.BITOR: ("|", lambda a, b: a | b),
    Op.BITXOR: ("^", lambda a, b: a ^ b),
    Op.SHL: ("<<", lambda a, b: a << b),
    Op.SHR: (">>", lambda a, b: a >> b),
}

_COMPARE: dict[Op, tuple[str, Callable[[int, int], bool]]] = {
    Op.LT: ("<", lambda a, b: a < b),
    Op.LE: ("<=", lambda a, b: a <= b),
    Op.EQ: ("==", lambda a, b: a == b),
    Op.NE: ("!=", lambda a, b: a != b),
    Op.GT: (">", lambda a, b: a > b),
    Op.GE: (">=", lambda a, b: a >= b),
}
_NEGATED = {"<": ">=", "<=": ">", "==": "!=", "!=": "==", ">": "<=", ">=": "<"}


class GuardSink:
    """Receives the guards recorded while tracing (implemented by the tracer)."""

    def add_guard(self, code: tuple[int, ...], text: str, origin: Optional["SymbolicInt"] = None) -> None:
        raise NotImplementedError

    def note_arithmetic(self) -> None:
        """Called on every symbolic operation (see the tracer's parse-guard logic)."""

    def track(self, stand_in) -> None:
        """Called for every stand-in made (the tracer settles the ones its body kept: trace/escapes.py)."""

    def error(self, message: str, overflow: bool = False, kind: Optional[type] = None) -> Exception:
        """The exception to raise for a problem in the body (names op and line);
        with ``overflow`` it is also an OverflowError; ``kind``: the exception's class."""
        return (kind or (OverflowError if overflow else ValueError))(message)


class SymbolicInt:
    """An int64 expression with the concrete value of the call being traced."""

    __slots__ = ("code", "text", "value", "sink", "is_bool", "__weakref__")

    def __init__(self, code: tuple[int, ...], text: str, value: int, sink: GuardSink, is_bool: bool = False):
        if not (INT64_MIN <= value <= INT64_MAX):
            raise sink.error(f"integer overflow: `{text}` = {value} does not fit in int64", overflow=True)
        self.code = code
        self.text = text
        self.value = value
        self.sink = sink
        self.is_bool = is_bool
        sink.track(self)

    # isinstance(n, int) holds, as for a SymInt under torch.compile: libraries test it before using a value as
    # a number (`if isinstance(dims, int): dims = [dims]`); type(n) still tells the stand-in.
    @property
    def __class__(self):
        return bool if self.is_bool else int

    # -- construction -------------------------------------------------------
    def _lift(self, other) -> Optional["SymbolicInt"]:
        if isinstance(other, SymbolicInt):
            return other
        if isinstance(other, bool):
            return SymbolicInt((Op.CONST, int(other)), str(other), int(other), self.sink, is_bool=True)
        if isinstance(other, int):
            return SymbolicInt((Op.CONST, other), str(other), other, self.sink)
        return None

    def _binary(self, other, op: Op, reverse: bool = False):
        rhs = self._lift(other)
        if rhs is None:
            if isinstance(other, float) and op in (Op.ADD, Op.SUB, Op.MUL, Op.FLOORDIV, Op.MOD):
                # A float made from a size: its value, guarded (the plan holds for this size), as `/` makes one.
                value = self.specialize()
                return _BINARY[op][1](other, value) if reverse else _BINARY[op][1](value, other)
            return NotImplemented
        a, b = (rhs, self) if reverse else (self, rhs)
        symbol, fn = _BINARY[op]
        self.sink.note_arithmetic()
        text = f"({a.text} {symbol} {b.text})"
        # Where Python raises, so does the trace, naming op and line; the guard keeps the plan of this failure
        # (a fallback) to the calls that fail alike.
        if op in (Op.FLOORDIV, Op.MOD) and b.value == 0:
            self.sink.add_guard(b.code + (Op.CONST, 0, Op.EQ), f"{b.text} == 0")
            raise self.sink.error(f"division by zero: `{text}` with `{b.text}` = 0", kind=TraceZeroDivisionError)
        if op in (Op.SHL, Op.SHR) and b.value < 0:
            self.sink.add_guard(b.code + (Op.CONST, 0, Op.LT), f"{b.text} < 0")
            raise self.sink.error(f"negative shift count: `{text}` with `{b.text}` = {b.value}")
        # As in Python (and so for Triton): & | ^ of two bools is a bool.
        is_bool = a.is_bool and b.is_bool and op in (Op.BITAND, Op.BITOR, Op.BITXOR)
        return SymbolicInt(a.code + b.code + (op,), text, fn(a.value, b.value), self.sink, is_bool)

    def _compare(self, other, op: Op):
        rhs = self._lift(other)
        if rhs is None:
            return NotImplemented
        symbol, fn = _COMPARE[op]
        result = fn(self.value, rhs.value)
        code = self.code + rhs.code + (op,)
        if result:
            self.sink.add_guard(code, f"{self.text} {symbol} {rhs.text}")
        else:  # written as a user would: `x.stride(0) == 1`, not `not (x.stride(0) != 1)`
            self.sink.add_guard(code + (Op.NOT,), f"{self.text} {_NEGATED[symbol]} {rhs.text}")
        return result

    def unary(self, op: Op, text: str, value: int) -> "SymbolicInt":
        self.sink.note_arithmetic()
        return SymbolicInt(self.code + (op,), text, value, self.sink)

    # -- arithmetic stays symbolic -----------------------------------------------
    def __add__(self, o): return self._binary(o, Op.ADD)
    def __radd__(self, o): return self._binary(o, Op.ADD, True)
    def __sub__(self, o): return self._binary(o, Op.SUB)
    def __rsub__(self, o): return self._binary(o, Op.SUB, True)
    def __mul__(self, o): return self._binary(o, Op.MUL)
    def __rmul__(self, o): return self._binary(o, Op.MUL, True)
    def __floordiv__(self, o): return self._binary(o, Op.FLOORDIV)
    def __rfloordiv__(self, o): return self._binary(o, Op.FLOORDIV, True)
    def __mod__(self, o): return self._binary(o, Op.MOD)
    def __rmod__(self, o): return self._binary(o, Op.MOD, True)
    # As Python's divmod: the floor quotient and the remainder, each symbolic (NotImplemented as they are).
    def __divmod__(self, o): return _pair(self._binary(o, Op.FLOORDIV), lambda: self._binary(o, Op.MOD))
    def __rdivmod__(self, o): return _pair(self._binary(o, Op.FLOORDIV, True), lambda: self._binary(o, Op.MOD, True))
    def __and__(self, o): return self._binary(o, Op.BITAND)
    def __rand__(self, o): return self._binary(o, Op.BITAND, True)
    def __or__(self, o): return self._binary(o, Op.BITOR)
    def __ror__(self, o): return self._binary(o, Op.BITOR, True)
    def __xor__(self, o): return self._binary(o, Op.BITXOR)
    def __rxor__(self, o): return self._binary(o, Op.BITXOR, True)
    def __lshift__(self, o): return self._binary(o, Op.SHL)
    def __rlshift__(self, o): return self._binary(o, Op.SHL, True)
    def __rshift__(self, o): return self._binary(o, Op.SHR)
    def __rrshift__(self, o): return self._binary(o, Op.SHR, True)

    def __neg__(self):
        return self.unary(Op.NEG, f"(-{self.text})", -self.value)

    def __pos__(self):
        return self

    # A float made from a size: its value, guarded (the plan holds for this size).
    def __truediv__(self, o):
        return self._on_values(self, "/", o)

    def __rtruediv__(self, o):
        return self._on_values(o, "/", self)

    def __pow__(self, o):
        return self._on_values(self, "**", o)

    def __rpow__(self, o):
        return self._on_values(o, "**", self)

    def _on_values(self, a, symbol: str, b):
        """``a / b`` or ``a ** b`` on the values (each SymbolicInt's guarded); a division by zero names op and
        line, as the arithmetic that stays symbolic does."""
        x, y = (v.specialize() if isinstance(v, SymbolicInt) else v for v in (a, b))
        try:
            return x / y if symbol == "/" else x ** y
        except ZeroDivisionError:
            text = f"{getattr(a, 'text', a)} {symbol} {getattr(b, 'text', b)}"
            raise self.sink.error(f"division by zero: `{text}` with values {x!r} and {y!r}",
                                  kind=TraceZeroDivisionError) from None

    def bit_length(self) -> "SymbolicInt":
        return self.unary(Op.BIT_LENGTH, f"{self.text}.bit_length()", self.value.bit_length())

    def __ceil__(self):
        return self

    __floor__ = __trunc__ = __ceil__

    def __round__(self, ndigits=None):
        if ndigits is None or ndigits >= 0:  # an int rounds to itself
            return self
        return round(self.specialize(), ndigits)

    # -- conversions to Python values record guards -------------------------------
    def __lt__(self, o): return self._compare(o, Op.LT)
    def __le__(self, o): return self._compare(o, Op.LE)
    def __gt__(self, o): return self._compare(o, Op.GT)
    def __ge__(self, o): return self._compare(o, Op.GE)
    def __eq__(self, o): return self._compare(o, Op.EQ)
    def __ne__(self, o): return self._compare(o, Op.NE)

    def __bool__(self) -> bool:
        return self._compare(0, Op.NE)

    def specialize(self) -> int:
        """The concrete value, guarded: the plan holds only for calls where it is equal."""
        self.sink.add_guard(self.code + (Op.CONST, self.value, Op.EQ), f"{self.text} == {self.value}", origin=self)
        return self.value

    def __index__(self) -> int:
        return self.specialize()

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.specialize())

    def __hash__(self) -> int:
        return hash(self.specialize())

    def __abs__(self):
        return -self if self < 0 else self

    # As text, the int it stands for (a message, a key built from it): the value, guarded like any other use.
    def __repr__(self) -> str:
        return repr(self.specialize())

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self.specialize(), spec)

    def encode(self) -> tuple[list[int], str]:
        return [int(c) for c in self.code], self.text

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # torch's argument parser takes an object that is not a Python number where a number goes (a Scalar, a
        # dim: torch.arange(n)) only through this protocol: the call goes to the tracer, as one on a stand-in
        # tensor does (sizes given as separate arguments are _inlined_calls' part).
        return torch_function_of_stand_ins(func, args, kwargs)



def torch_function_of_stand_ins(func, args, kwargs):
    """A torch call given a stand-in: recorded by this thread's tracer."""
    tracer = current_tracer()
    if tracer is None:
        raise ValueError(f"a torch_tile stand-in was passed to {getattr(func, '__name__', func)} outside its trace")
    return tracer.torch_function(func, args, kwargs or {})


def sym_min(a, b):
    """min() without a guard when both sides are symbolic-compatible."""
    if isinstance(a, SymbolicInt) or isinstance(b, SymbolicInt):
        x = a if isinstance(a, SymbolicInt) else b
        la, lb = x._lift(a), x._lift(b)
        return SymbolicInt(la.code + lb.code + (Op.MIN,), f"min({la.text}, {lb.text})", min(la.value, lb.value), x.sink)
    return min(a, b)


def sym_max(a, b):
    """max() without a guard when both sides are symbolic-compatible."""
    if isinstance(a, SymbolicInt) or isinstance(b, SymbolicInt):
        x = a if isinstance(a, SymbolicInt) else b
        la, lb = x._lift(a), x._lift(b)
        return SymbolicInt(la.code + lb.code + (Op.MAX,), f"max({la.text}, {lb.text})", max(la.value, lb.value), x.sink)
    return max(a, b)


def _pair(quotient, remainder: Callable[[], Any]):
    """``divmod``'s result from its two halves (NotImplemented where the quotient is)."""
    return NotImplemented if quotient is NotImplemented else (quotient, remainder())


def next_power_of_2(n: SymbolicInt) -> SymbolicInt:
    """triton.next_power_of_2 of a stand-in's int, one opcode (Triton's own takes it while bodies trace)."""
    return n.unary(Op.NEXT_POW2, f"next_power_of_2({n.text})", _next_pow2(n.value))


def encode_int(value, sink: GuardSink) -> tuple[list[int], str]:
    """Bytecode of an int or SymbolicInt."""
    if isinstance(value, SymbolicInt):
        return value.encode()
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int):
        raise sink.error(f"expected an int, got {type(value).__name__}")
    if not (INT64_MIN <= value <= INT64_MAX):
        raise sink.error(f"integer overflow: {value} does not fit in int64", overflow=True)
    return [int(Op.CONST), value], str(value)


def _str_bytes(words, n: int) -> bytes:
    return b"".join(int(w).to_bytes(8, "little", signed=True) for w in words)[:n]


# Words after each opcode that has operands (STR_EQ: 2, then its string's words).
_OPERANDS = {Op.CONST: 1, Op.SIZE: 2, Op.STRIDE: 2, Op.NUMEL: 1, Op.SCALAR: 1, Op.IS_NONE: 1, Op.DATA_PTR: 1,
             Op.FLOAT_BITS: 1, Op.LIST_LEN: 1, Op.LIST_ITEM: 2, Op.STR_EQ: 2, Op.READ: 1, Op.REQUIRES_GRAD: 1}


def substitute(code, replace) -> list[int]:
    """``code`` with each operation that has operands (an atom: ``(op, *operands)``) replaced by
    ``replace(atom)`` (bytecode), where that is not None."""
    out, pc = [], 0
    while pc < len(code):
        op = Op(code[pc])
        width = 1 + _OPERANDS.get(op, 0)
        if op == Op.STR_EQ:
            width += (code[pc + 2] + 7) // 8
        atom = tuple(int(c) for c in code[pc:pc + width])
        replacement = replace(atom) if width > 1 else None
        out.extend(atom if replacement is None else replacement)
        pc += width
    return out


def _address(t) -> int:
    """A tensor's address; 0 (aligned) for one with no data (fake, meta)."""
    try:
        return t.data_ptr()
    except Exception:  # noqa: BLE001 - FakeTensor and friends refuse to have one
        return 0


def evaluate(code, tensors: list, scalars: list, reads: tuple = ()):
    """Evaluates bytecode over ``tensors`` (by slot), the arguments
    ``scalars`` (by argument index: ints, dtypes as ScalarType codes, strs,
    None) and the values ``reads`` read from the data (``READ k``). Works on
    ints and on torch SymInts alike: the fake implementation evaluates a
    plan's output shapes on SymInts this way. A tensor with no
    data (a fake one) has address 0 (aligned)."""
    stack: list = []
    pc = 0
    while pc < len(code):
        op = Op(code[pc])
        pc += 1
        if op == Op.IS_NONE:
            stack.append(int(scalars[code[pc]] is None))
            pc += 1
        elif op == Op.REQUIRES_GRAD:
            stack.append(int(tensors[code[pc]].requires_grad))
            pc += 1
        elif op == Op.DATA_PTR:
            stack.append(_address(tensors[code[pc]]))
            pc += 1
        elif op == Op.LIST_LEN:
            stack.append(len(scalars[code[pc]]))
            pc += 1
        elif op == Op.LIST_ITEM:
            stack.append(scalars[code[pc]][code[pc + 1]])
            pc += 2
        elif op == Op.FLOAT_BITS:
            stack.append(struct.unpack("<q", struct.pack("<d", float(scalars[code[pc]])))[0])
            pc += 1
        elif op == Op.STR_EQ:
            arg, n = code[pc], code[pc + 1]
            words = code[pc + 2:pc + 2 + (n + 7) // 8]
            value = scalars[arg]
            stack.append(int(isinstance(value, str) and value.encode() == _str_bytes(words, n)))
            pc += 2 + (n + 7) // 8
        elif op == Op.CONST:
            stack.append(code[pc])
            pc += 1
        elif op in (Op.SIZE, Op.STRIDE):
            t = tensors[code[pc]]
            stack.append(t.size(code[pc + 1]) if op == Op.SIZE else t.stride(code[pc + 1]))
            pc += 2
        elif op == Op.NUMEL:
            stack.append(tensors[code[pc]].numel())
            pc += 1
        elif op == Op.SCALAR:
            stack.append(scalars[code[pc]])
            pc += 1
        elif op == Op.READ:
            stack.append(reads[code[pc]])
            pc += 1
        elif op == Op.NEG:
            stack.append(-stack.pop())
        elif op == Op.NOT:
            stack.append(torch.sym_not(stack.pop()))
        elif op == Op.NEXT_POW2:
            stack.append(_next_pow2(int(stack.pop())))  # no symbolic form: guards on the value
        elif op == Op.BIT_LENGTH:
            stack.append(int(stack.pop()).bit_length())  # likewise
        else:
            b, a = stack.pop(), stack.pop()
            if op == Op.MIN:
                stack.append(torch.sym_min(a, b))
            elif op == Op.MAX:
                stack.append(torch.sym_max(a, b))
            elif op in _COMPARE:
                stack.append(_COMPARE[op][1](a, b))
            else:
                stack.append(_BINARY[op][1](a, b))
    (result,) = stack
    return result
