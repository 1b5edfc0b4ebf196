"""Calls a body makes into code that takes tensors at their word, run inline while the body is traced.

A stand-in answers ``isinstance(x, torch.Tensor)`` as the tensor it stands for,
but it is not one: C code that checks that and then reads the object as a
tensor would read garbage. Two such entries are common in real wrappers:

* ``torch.autograd.Function.apply`` (most libraries' public entry point), whose
  C entry unpacks its tensor arguments. While this thread traces, the
  Function's forward runs inline instead, on the stand-ins (its launches and
  allocations go into the plan like the body's own), with a context that
  records what the forward keeps for its backward (trace/functions.py: the
  tape a gradient op replays). While a real run of the body records its
  Functions (the Python path's forward op), the same on real tensors.
* torch's factories that take sizes as separate arguments (``torch.empty(m, n)``):
  torch's argument parser reads a first size that takes part in
  ``__torch_function__`` (as stand-in ints do, to be accepted where numbers go)
  as a size list of its own and refuses the call, so while this thread traces,
  a call given a stand-in goes to the tracer before the parser.
* A ``torch.compile``'d helper (Dynamo would trace the stand-ins as tensors):
  it runs as the plain function it wraps, whose torch calls the tracer records
  (as torch runs compiled callables met while it traces itself).

The entries are patched only while some thread traces (refcounted); on every
other thread, and on this one outside a trace, they behave exactly as before.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import torch

from .. import _process_locks
from .expr import SymbolicInt
from .functions import applied_through_torch, current_eager_tape, recording, routed_apply, skips_setup_context
from .state import current_tracer

_Function = torch.autograd.Function
_original_apply = _Function.__dict__["apply"]  # the C entry (torch >= 2.12) or Python's classmethod before it


_FunctionMeta = type(_Function)


def _routed_getattribute(cls, name: str):
    """The attributes of Function classes while some thread traces: ``forward`` (and ``setup_context``) as torch's
    own ``apply`` reads them, where this thread records a body's Functions (an alias ``F.apply`` bound before the
    patch reaches torch's C entry, which reads these)."""
    value = type.__getattribute__(cls, name)
    if name == "forward" and recording():
        return applied_through_torch(cls, value)
    if name == "setup_context" and skips_setup_context(cls):
        return lambda ctx, inputs, output: None
    return value


def _routed_apply(cls, *args, **kwargs):
    if current_tracer() is None and current_eager_tape() is None:
        return _original_apply.__get__(None, cls)(*args, **kwargs)
    return routed_apply(cls, args, kwargs)


# torch's factories whose sizes may be given as separate arguments.
_SIZE_FACTORIES = ("empty", "zeros", "ones", "rand", "randn")
_original_factories = {name: getattr(torch, name) for name in _SIZE_FACTORIES}


def _routed_factory(name: str):
    original = _original_factories[name]

    def factory(*args, **kwargs):
        tracer = current_tracer()
        if tracer is None or not any(isinstance(a, (SymbolicInt, torch.Tensor)) for a in args):
            return original(*args, **kwargs)
        return tracer.torch_function(original, args, kwargs)
    return factory


_routed_factories = {name: _routed_factory(name) for name in _SIZE_FACTORIES}


def _routed_callback_from_stance(original):
    def callback_from_stance(callback):
        # None: the compiled callable runs the function it wraps, as under torch.compiler.set_stance("force_eager").
        return None if current_tracer() is not None else original(callback)
    return callback_from_stance


class _Dynamo:
    """torch._dynamo.eval_frame, patched while bodies trace (if it was imported when the first trace began)."""
    module: Any = None
    original: Any = None


def _apply() -> None:
    _Function.apply = classmethod(_routed_apply)
    _FunctionMeta.__getattribute__ = _routed_getattribute
    for name, factory in _routed_factories.items():
        setattr(torch, name, factory)
    # Only a program that imported Dynamo can have compiled callables; nothing is imported here.
    dynamo = sys.modules.get("torch._dynamo.eval_frame")
    if dynamo is not None and hasattr(dynamo, "_callback_from_stance"):
        _Dynamo.module, _Dynamo.original = dynamo, dynamo._callback_from_stance
        dynamo._callback_from_stance = _routed_callback_from_stance(_Dynamo.original)


def _undo() -> None:
    _Function.apply = _original_apply
    if "__getattribute__" in _FunctionMeta.__dict__:  # undone where it was never applied too (a forked child)
        del _FunctionMeta.__getattribute__
    for name, factory in _original_factories.items():
        setattr(torch, name, factory)
    if _Dynamo.module is not None:
        _Dynamo.module._callback_from_stance = _Dynamo.original
        _Dynamo.module = _Dynamo.original = None


_patches = _process_locks.ScopedPatch(_apply, _undo)


class inlined_calls:
    """While at least one trace runs: ``Function.apply`` and torch.compile'd callables run inline on stand-ins."""

    def __enter__(self):
        # This thread's compiled callables run eagerly, by torch's own switch where it has one (it keeps a
        # fullgraph=True callable's checks quiet); elsewhere by the callback patched below.
        dynamo = sys.modules.get("torch._dynamo.eval_frame")
        nested = getattr(dynamo, "_use_eager_on_nested_compile", None)
        self._eager = nested() if nested is not None else contextlib.nullcontext()
        self._eager.__enter__()
        _patches.__enter__()
        return self

    def __exit__(self, *exc):
        _patches.__exit__(*exc)
        self._eager.__exit__(*exc)
        return False
