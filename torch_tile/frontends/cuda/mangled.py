"""What a C++ kernel's mangled name (Itanium ABI, as NVRTC lowers it) says about
its parameters: pointer, integer or floating point, where the name tells.

The cubin gives each parameter's size only, and an ``int`` and a ``float`` are
both 4 bytes: a Python float passed where the kernel declares ``int`` would
arrive as the float's bits. A mangled name lists the declared types, so such a
launch is refused. ``extern "C"`` kernels have no mangled name: only sizes are
checked for them. Types the name spells in ways not read here (class types,
substitutions) are left unchecked (None)."""

from __future__ import annotations

from typing import Optional

POINTER, INTEGER, FLOATING = "pointer", "integer", "floating point"

_BUILTINS = {
    **{c: INTEGER for c in "bcahstijlmxyw"},  # bool, chars, short...long long, wchar_t
    **{c: FLOATING for c in "fde"},  # float, double, long double
}


class _Reader:
    def __init__(self, text: str):
        self.text, self.pos = text, 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        c = self.peek()
        self.pos += 1
        return c

    def number(self) -> int:
        start = self.pos
        while self.peek().isdigit():
            self.pos += 1
        if start == self.pos:
            raise ValueError("number expected")
        return int(self.text[start:self.pos])

    def source_name(self) -> None:
        length = self.number()  # read first: it moves pos
        self.pos += length

    def template_args(self) -> list[Optional[str]]:
        """After 'I': the arguments' categories when they are types (None otherwise), up to the 'E'."""
        args = []
        while self.peek() != "E":
            if self.peek() == "L":  # a literal: L <type> <value> E
                self.take()
                while self.take() != "E":
                    pass
                args.append(None)
            else:
                args.append(self.type([]))
        self.take()
        return args

    def type(self, template: list[Optional[str]]) -> Optional[str]:
        c = self.take()
        if c == "P":
            self.type(template)
            return POINTER
        if c in "KVr":  # const, volatile, restrict
            return self.type(template)
        if c in _BUILTINS:
            return _BUILTINS[c]
        if c == "v":  # void: a template's return type, or the empty parameter list
            return None
        if c == "D":  # Dh: half; DF<n>_: _Float<n>; other D... types are not read here
            d = self.take()
            if d == "h":
                return FLOATING
            if d == "F":
                self.number()
                self.take()  # "_" (or "b" of DF16b, then "_")
                if self.text[self.pos - 1] == "b":
                    self.take()
                return FLOATING
            raise ValueError("unread D type")
        if c == "T":  # a template parameter: T_ is the first, T<n>_ the (n+2)th
            index = 0 if self.peek() == "_" else self.number() + 1
            self.take()
            return template[index] if index < len(template) else None
        if c == "S":  # a substitution (S_, S<seq>_): a type seen before, not tracked here
            while self.take() != "_":
                pass
            return None
        if c.isdigit():  # a class type by name
            self.pos -= 1
            self.source_name()
            if self.peek() == "I":
                self.take()
                self.template_args()
            return None
        raise ValueError(f"unread type code {c!r}")


def parameter_categories(lowered_name: str) -> Optional[list[Optional[str]]]:
    """Per parameter of the kernel ``lowered_name`` names: POINTER, INTEGER, FLOATING or None (not read);
    None for a name that is not mangled (``extern "C"``) or not read."""
    if not lowered_name.startswith("_Z"):
        return None
    r = _Reader(lowered_name)
    r.pos = 2
    try:
        template: list[Optional[str]] = []
        is_template = False
        if r.peek() == "N":  # a nested name: namespaces, then the function
            r.take()
            while r.peek() != "E":
                if r.peek() == "I":
                    r.take()
                    template, is_template = r.template_args(), True
                else:
                    r.source_name()
                    is_template = False
            r.take()
        else:
            r.source_name()
            if r.peek() == "I":
                r.take()
                template, is_template = r.template_args(), True
        if is_template:
            r.type(template)  # a function template's name encodes its return type
        params = []
        while r.pos < len(r.text):
            params.append(r.type(template))
        return [] if params == [None] and lowered_name.endswith("v") else params
    except (ValueError, IndexError):
        return None
