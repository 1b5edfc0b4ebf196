"""``torch_tile.op``: a Python body that launches Triton kernels becomes a real
PyTorch operator whose CUDA implementation runs in C++."""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Union

import torch

from . import _C
from ._launch_mode import SkipLaunches, launch_mode
from ._tracer import Tracer
from ._triton_frontend import InterpretLaunches

# Argument kinds understood by the C++ op (csrc/torch/tile_op.h: ArgKind).
_ARG_KINDS = {"Tensor": 0, "int": 1, "SymInt": 1, "float": 2, "bool": 3}


class TileOp:
    """A tile operator: ``torch.ops.<ns>.<name>`` backed by a traced launch plan.

    Calling the object calls the registered op (same as ``torch.ops.<ns>.<name>``).

    Dispatch keys:
      * CUDA: native C++ kernel. The first call of each new case (dtype, rank,
        branch taken on sizes) traces ``fn`` into a launch plan; each new
        specialization compiles once with Triton. Every other call runs in C++.
      * Meta / fake tensors: ``fn`` runs on fake tensors with launches skipped,
        so torch.compile and shape propagation see the real output shapes.
      * CPU: ``fn`` runs eagerly with launches executed by Triton's interpreter,
        a slow debug path for machines without a GPU.
    """

    def __init__(self, qualname: str, fn: Callable, mutates_args: Union[str, Iterable[str]] = (),
                 schema: Optional[str] = None):
        if "::" not in qualname:
            raise ValueError(f"torch_tile.op: name must be 'namespace::name', got {qualname!r}")
        self.qualname = qualname
        self.namespace, self.name = qualname.split("::", 1)
        self.fn = fn
        if schema is None:
            schema = torch.library.infer_schema(fn, mutates_args=mutates_args)
        self.schema = schema
        # Validate before defining, so that a refused op leaves nothing behind.
        parsed = torch._C.parse_schema(f"{qualname}{schema}")
        self.arg_names = [a.name for a in parsed.arguments]
        kinds = []
        for a in parsed.arguments:
            kind = _ARG_KINDS.get(str(a.real_type))  # real_type: ScalarType/Layout are "int" in a.type
            if kind is None or a.kwarg_only:
                raise TypeError(
                    f"torch_tile.op {qualname}: argument '{a.name}' has type {a.real_type}"
                    f"{' (keyword-only)' if a.kwarg_only else ''}; supported: positional Tensor, int, float, bool"
                )
            kinds.append(kind)
        for r in parsed.returns:
            if str(r.type) != "Tensor":
                raise TypeError(f"torch_tile.op {qualname}: returns must be Tensors, got {r.type}")
        self.num_returns = len(parsed.returns)
        self._lib = torch.library.Library(self.namespace, "FRAGMENT")
        self._lib.define(self.name + schema)
        self.overload = getattr(getattr(torch.ops, self.namespace), self.name).default
        torch.library.register_fake(qualname, self._fake, lib=self._lib)
        self._lib.impl(self.name, self._interpret, "CPU")
        _C.register_op(qualname, kinds, self.num_returns, self._trace, "CUDA")
        # Python calls skip torch.ops' generic argument parsing (see csrc/python/fast_caller.h).
        packet = getattr(getattr(torch.ops, self.namespace), self.name)
        packet._op = _C.fast_caller(qualname, packet._op)
        self.overload._op = _C.fast_caller(qualname, self.overload._op)
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __call__(self, *args, **kwargs):
        return self.overload(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<torch_tile op {self.qualname}{self.schema}>"

    @property
    def plan_count(self) -> int:
        """Launch plans traced so far (one per dtype/rank/branch case)."""
        return _C.plan_count(self.qualname)

    def trace(self, *args) -> dict:
        """The launch plan for these arguments (what the C++ runtime receives)."""
        return Tracer(self, args).run()

    # Called by C++ (GIL held) when no plan matches.
    def _trace(self, args: tuple) -> dict:
        return Tracer(self, args).run()

    def _fake(self, *args):
        with launch_mode(SkipLaunches()):
            return self.fn(*args)

    def _interpret(self, *args):
        # Trace too (cheap next to the interpreter), so that a body the CUDA
        # path cannot take fails here with the same TraceError.
        Tracer(self, args).run()
        with launch_mode(InterpretLaunches()):
            return self.fn(*args)


def op(qualname: str, fn: Optional[Callable] = None, *, mutates_args: Union[str, Iterable[str]] = (),
       schema: Optional[str] = None):
    """Registers a tile op, in the style of ``torch.library.triton_op``.

    ``fn`` is written as for ``torch.library.triton_op``: it allocates outputs
    (``torch.empty_like``, ``torch.empty(..., device=x.device)``...) and launches
    ``@triton.jit`` kernels with ``kernel[grid](...)``; ordinary Python on sizes
    (``if``, ``min``/``max``, ``triton.cdiv``, ``triton.next_power_of_2``,
    ``num_warps=4 if BLOCK < 2048 else 8``) is allowed and becomes guards.

    Args:
        qualname: ``"namespace::name"``; the op appears as ``torch.ops.namespace.name``.
        mutates_args: names of tensor arguments the kernels write (as in
            ``torch.library.custom_op``).
        schema: explicit schema string such as ``"(Tensor x, int n) -> Tensor"``;
            inferred from type hints when omitted.

    Returns:
        a :class:`TileOp` (or a decorator producing one).
    """
    if fn is None:
        return lambda f: TileOp(qualname, f, mutates_args, schema)
    return TileOp(qualname, fn, mutates_args, schema)
