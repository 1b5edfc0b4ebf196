"""``torch_tile.op``: a Python body that launches Triton kernels becomes a real
PyTorch operator whose CUDA implementation runs in C++."""

from __future__ import annotations

import types
from typing import Callable, Iterable, Optional, Union

import torch

from . import _C, _fallback, _functorch, _interpreter_exit, _op_names, _plan, _sharding, _training
from ._dispatch_keys import with_autograd_keys
from ._errors import TraceError
from ._fake import fake_call
from ._launch_mode import launch_mode
from ._plan import ArgKind
from .frontends.frontend import InterpretLaunches
from .trace import NeedsDataValues, TracedOp, Tracer, learn_data_values
from .trace.backward import SavedLayout, gradient_body, gradient_schema
from .trace.functions import TapeLayout, tape_gradient_body, tape_sources

# What the dispatcher and the runtime call in Python (kernels, hooks) is torch_tile's own code, never traced by
# torch.compile (a graph break would make Dynamo compile it, and meet stand-ins), as torch.library's kernels.
def _entry(fn: Callable) -> Callable:
    """A Python entry the dispatcher or the runtime calls: never traced by torch.compile, and waited for by the
    interpreter's exit (_interpreter_exit)."""
    if not isinstance(fn, types.FunctionType):  # a C entry (autograd.Function's apply) takes no attributes
        entry = fn

        def fn(*args, **kwargs):
            return entry(*args, **kwargs)
    return torch._disable_dynamo(_interpreter_exit.work(fn))  # the bookkeeping not traced either

# Every TileOp of this process, by qualname (bundles export by namespace).
_REGISTRY: dict[str, "TileOp"] = {}


def registered_ops() -> dict[str, "TileOp"]:
    """The tile ops defined in this process, by qualname."""
    return dict(_REGISTRY)


class TileOp:
    """A tile operator: ``torch.ops.<ns>.<name>`` backed by a traced launch plan.

    Calling the object calls the registered op (same as ``torch.ops.<ns>.<name>``).

    Dispatch keys:
      * CUDA: native C++ kernel. The first call of each new case (dtype, rank,
        branch taken on sizes) traces ``fn`` into a launch plan; each new
        specialization compiles once with Triton. Every other call runs in C++.
      * Meta / fake tensors: the plan traced on the size hints gives the
        output shapes, evaluated on SymInts (see ``_fake.py``), so
        torch.compile sees the real outputs and guards only where they depend
        on a branch.
      * Autograd: calls needing no gradient go straight to the kernel in C++;
        others run under a ``torch.autograd.Function`` with the backward given
        to :meth:`register_autograd` (or one that raises, naming the op).
      * CPU: ``fn`` runs eagerly with launches executed by Triton's interpreter,
        a slow debug path for machines without a GPU.
    """

    def __init__(self, qualname: str, fn: Callable, mutates_args: Union[str, Iterable[str]] = (),
                 schema: Optional[str] = None, gradient_of: Optional["TileOp"] = None, fallback: bool = True,
                 forward_of: Optional["TileOp"] = None):
        self.namespace, self.name, self.overload_name = _op_names.parse(qualname)  # before anything is registered
        self.qualname = qualname
        self.fn = fn
        # Whether calls whose body no plan can hold run the body itself (_fallback.py); a gradient op's never do.
        self.fallback = fallback and gradient_of is None
        # The forward op of `forward_of` (see _training.py): called below autograd, its plans keep no backward.
        self.forward_of = forward_of
        if schema is None:
            schema = torch.library.infer_schema(fn, mutates_args=mutates_args)
        self.schema = schema
        # Validate before defining, so that a refused op leaves nothing behind.
        parsed = torch._C.parse_schema(f"{qualname}{schema}")
        self.arg_names = [a.name for a in parsed.arguments]
        self.mutated_args = [i for i, a in enumerate(parsed.arguments) if a.alias_info is not None
                             and a.alias_info.is_write]
        kinds = []
        for a in parsed.arguments:
            kind = _C.arg_kind_of_type(str(a.real_type))  # real_type: ScalarType/Layout are "int" in a.type
            if kind is None:
                raise TypeError(f"torch_tile.op {qualname}: argument '{a.name}' has type {a.real_type}; supported: "
                                f"{_C.SUPPORTED_ARG_TYPES}")
            if kind == ArgKind.TENSOR_LIST and a.alias_info is not None and a.alias_info.is_write:
                raise TypeError(f"torch_tile.op {qualname}: argument '{a.name}': ops that write the tensors of a "
                                "list[Tensor] argument are not supported; pass the written tensors as Tensor arguments")
            kinds.append(kind)
        self.kwarg_only = [a.name for a in parsed.arguments if a.kwarg_only]
        # Schema defaults, for Python kernels torch calls without them.
        self._defaults = [(a.name, _python_value(a.default_value if a.has_default_value() else None, k))
                          for a, k in zip(parsed.arguments, kinds)]
        self._required = [a.name for a in parsed.arguments if not a.has_default_value()]
        self.arg_kinds = kinds  # checked per call on the Python paths
        # The arguments the dispatcher's stack carries as a ScalarType code (the body sees a torch.dtype).
        self._dtype_args = tuple(i for i, k in enumerate(kinds) if k in (ArgKind.DTYPE, ArgKind.OPTIONAL_DTYPE))
        returns = [str(r.type) for r in parsed.returns]
        # Tensor, a tuple of Tensors, one list[Tensor] (any length), or None.
        self.returns_list = returns == ["List[Tensor]"]
        if not self.returns_list and any(r != "Tensor" for r in returns):
            raise TypeError(f"torch_tile.op {qualname}: returns must be a Tensor, a tuple of Tensors, a "
                            f"list[Tensor] or None, got ({', '.join(returns)})")
        self.num_returns = len(parsed.returns)
        # A return the schema declares to be a written argument (`(Tensor(a!) x) -> Tensor(a!)`) is that tensor
        # itself; every other output is the op's own (a copy where the body returns an argument: _fallback.py).
        self.returned_args = tuple(_returned_argument(qualname, parsed, r) for r in parsed.returns)
        self._lib = torch.library.Library(self.namespace, "FRAGMENT")
        # name[.overload], as torch.library's define and impl take it
        self._lib_name = op_name = qualname.split("::", 1)[1]
        self._lib.define(op_name + schema)
        packet = getattr(getattr(torch.ops, self.namespace), self.name)
        self.overload = getattr(packet, self.overload_name or "default")
        torch.library.register_fake(qualname, self._fake, lib=self._lib)
        self._lib.impl(op_name, self._interpret, "CPU")
        # A gradient op (see trace/backward.py) is the traced backward of `gradient_of`.
        self.gradient_of = gradient_of
        _C.register_op(qualname, schema, [int(k) for k in kinds], self.num_returns, self._trace, self._fallback_call,
                       "CUDA", gradient_op=gradient_of is not None)
        if gradient_of is not None:
            _C.register_gradient_op(qualname, _entry(self._run_eagerly))
        self._eagerly_because: Optional[str] = None  # a gradient op's: why its backward runs in Python
        self.backward_fn: Optional[Callable] = None  # as given to register_autograd
        self.setup_context_fn: Optional[Callable] = None
        self.vmap_fn: Optional[Callable] = None  # as given to register_vmap
        self.routed_through_functorch = False  # see _functorch.py
        # Calls needing no gradient stay in C++; the others run this Function.
        self.autograd_function = _autograd_function(self, None, None)
        apply = _autograd_apply(self, self.autograd_function, differentiable=False)
        _C.register_autograd(qualname, self.mutated_args, _entry(apply))
        if not self.mutated_args and not self.returns_list:
            # torch.func transforms reach the op's autograd.Function only from their own dispatch key: there an op
            # with no backward runs (its backward says it has none, should a transform differentiate it).
            _functorch.route(self, self._lib, self._lib_name)
        self._gradient_ops: dict[Union[SavedLayout, TapeLayout], TileOp] = {}  # by the layout the forward keeps
        self._gradient_count = 0
        self.layout: Optional[Union[SavedLayout, TapeLayout]] = None  # a gradient op's
        self._forward_op: Optional[TileOp] = None
        self._tape_function: Optional[type] = None
        # Whether the body calls an autograd.Function (None: no trace has run yet); see differentiates_itself.
        self.body_calls_function: Optional[bool] = None
        self.fallback_calls: dict[str, int] = {}  # why a fallback plan ran the body -> how many calls (explain)
        # Python calls skip torch.ops' generic argument parsing (see csrc/python/fast_caller.h); the packet's
        # own call resolves among its overloads, so it is this op's only while the op is its only overload.
        if packet.overloads() == [self.overload_name or "default"]:
            packet._op = _C.fast_caller(qualname, packet._op)
        self.overload._op = _C.fast_caller(qualname, self.overload._op)
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        _REGISTRY[qualname] = self

    def register_autograd(self, backward: Callable, *, setup_context: Optional[Callable] = None) -> None:
        """Declares the op's backward, as ``torch.library.register_autograd``.

        ``setup_context(ctx, inputs, output)`` saves what the backward needs
        (``ctx.save_for_backward(...)``, plain attributes for sizes);
        ``backward(ctx, *grads)`` receives one gradient per output and returns
        one per input (``None`` for non-tensor inputs or inputs without a
        gradient).

        Calls where no input requires grad never touch Python. Calls that
        need a gradient, on CUDA tensors, get a C++ autograd node:
        ``setup_context`` is traced into the op's plans and ``backward`` into
        the plans of a *gradient op* (``<ns>_grad::<name>``), so a training
        step runs no Python once traced; write both as an op body (sizes,
        tile ops, torch ops). Where one cannot be traced (warned once), and
        under create_graph, torch.compile and tensor subclasses, the op runs
        under a ``torch.autograd.Function`` (or its backward eagerly), as
        ``torch.library`` would run it; under torch.func transforms (grad, vjp,
        jacrev, vmap) as that Function too (see :meth:`register_vmap`).
        """
        if self.mutated_args:
            raise RuntimeError(
                f"{self.qualname}.register_autograd: the op mutates "
                f"{', '.join(self.arg_names[i] for i in self.mutated_args)}; as with torch.library, autograd "
                "is supported for functional ops only (return a new tensor instead)")
        if self.returns_list:
            raise RuntimeError(f"{self.qualname}.register_autograd: the op returns list[Tensor], through which tile "
                               "ops do not differentiate; return a tuple of tensors instead")
        if not callable(backward) or (setup_context is not None and not callable(setup_context)):
            raise TypeError(f"{self.qualname}.register_autograd: backward and setup_context must be callables")
        self.backward_fn, self.setup_context_fn = backward, setup_context
        self._gradient_ops.clear()
        self.clear_plans()  # traced again, with what the backward needs
        self.autograd_function = _autograd_function(self, backward, setup_context)
        _C.set_backward(self.qualname,
                        _entry(_autograd_apply(self, self.autograd_function, differentiable=True)))
        _functorch.route(self, self._lib, self._lib_name)

    def register_vmap(self, rule: Callable) -> None:
        """Declares how ``torch.func.vmap`` batches the op, as ``torch.library.register_vmap``:
        ``rule(info, in_dims, *args)`` returns ``(output, out_dims)``; ``info.batch_size`` is the batch's size,
        ``in_dims`` holds each argument's batch dimension (None: not batched). Without one, an op with a
        registered backward is batched by calling it once per sample (see ``_functorch.py``)."""
        if self.mutated_args or self.returns_list:
            raise NotImplementedError(f"{self.qualname}.register_vmap: the op mutates its arguments or returns "
                                      "list[Tensor]; vmap rules are supported for ops returning tensors only")
        if not callable(rule):
            raise TypeError(f"{self.qualname}.register_vmap: the rule must be a callable")
        self.vmap_fn = rule
        _functorch.route(self, self._lib, self._lib_name)

    def register_sharding(self, rule: Union[str, Callable], *, partial: tuple = ()) -> None:
        """Declares how the op runs on DTensor arguments, as ``torch.distributed.tensor.experimental.
        register_sharding``: ``rule(*args, **kwargs)`` (tensors as DTensor specs) returns the acceptable
        ``(output placements, argument placements)`` pairs; the op then runs on the local shards, and DTensor
        redistributes only where no pair matches the arguments. Or a shorthand, checked against the op's fake
        implementation: ``"elementwise"``, ``"rowwise"`` (over the last dimension: norms, softmax, a loss per
        row; ``partial``: the outputs that are sums over the rows, such as a norm's weight gradient) or
        ``"replicate"`` (every rank runs the op on whole tensors). See ``_sharding.py``."""
        _sharding.register_sharding(self, rule, partial)

    def gradient_op(self, layout: Union[SavedLayout, TapeLayout]) -> "TileOp":
        """The op that computes this op's gradients from what a forward kept in ``layout``: the registered
        backward's (a ``SavedLayout``), or the backwards of the Functions the body applies (a ``TapeLayout``)."""
        op = self._gradient_ops.get(layout)
        if op is None:
            self._gradient_count += 1  # names are never reused: a defined op stays defined
            suffix = f"_{self._gradient_count}" if self._gradient_count > 1 else ""
            overload = f".{self.overload_name}" if self.overload_name else ""
            name = f"{self.namespace}_grad::{self.name}{suffix}{overload}"
            tensor_args = [_plan.value_kind(k) == ArgKind.TENSOR for k in self.arg_kinds]
            if isinstance(layout, TapeLayout):
                body = tape_gradient_body(self.qualname, layout, tensor_args)
                body.sources = tape_sources(layout)
            else:
                body = gradient_body(self.qualname, layout, self.backward_fn, tensor_args)
                body.sources = (self.backward_fn,)
            op = TileOp(name, body, schema=gradient_schema(layout), gradient_of=self)
            op.layout = layout
            self._gradient_ops[layout] = op
        return op

    def gradient_op_named(self, qualname: str) -> "TileOp":
        """The gradient op of this op called ``qualname`` (a plan's ``BackwardSpec.gradient_op``)."""
        return next(op for op in self._gradient_ops.values() if op.qualname == qualname)

    def forward_op(self) -> "TileOp":
        """``<ns>_fwd::<name>``: the body returning its outputs and then the tensors its Functions keep, as a
        ``list[Tensor]``; its last argument, keyword-only ``tape_requires_grad``, says which tensors require a
        gradient (bit per argument: which Functions autograd records depends on it). The Python path's forward: see
        _training.py."""
        if self._forward_op is None:
            overload = f".{self.overload_name}" if self.overload_name else ""
            arguments = self.schema.rsplit("->", 1)[0].strip()[1:-1]
            keyword = "" if self.kwarg_only else "*, "  # keyword-only: it follows arguments with defaults
            self._forward_op = TileOp(f"{self.namespace}_fwd::{self.name}{overload}", _training.forward_body(self),
                                      schema=f"({arguments}, {keyword}int {_training.REQUIRES_GRAD_ARG}=0) -> Tensor[]",
                                      forward_of=self)
        return self._forward_op

    def variant_keys(self, *args, **kwargs) -> list[tuple[int, list[int]]]:
        """``(kernel id, key words)`` of each launch a call with these arguments makes (CPU tensors will do):
        the specialization keys the C++ runtime computes, which ``torch_tile.compile_variant(kernel_id, words,
        capability)`` compiles and bundles carry. Traces the call's case if no plan holds it yet."""
        return [(kid, list(words)) for kid, words in _C.variant_keys(self.qualname, args, kwargs)]

    def traced_op(self) -> TracedOp:
        """What a trace of this op needs of it (the tracer never holds the op)."""
        def function_applied() -> None:
            self.body_calls_function = True

        return TracedOp(self.qualname, tuple(self.arg_names), tuple(self.arg_kinds), self.num_returns,
                        self.returns_list, tuple(self.mutated_args), self.sources, self.call_body,
                        is_gradient_op=self.gradient_of is not None, backward_fn=self.backward_fn,
                        setup_context_fn=self.setup_context_fn,
                        gradient_op_name=lambda layout: self.gradient_op(layout).qualname,
                        function_applied=function_applied, returned_args=self.returned_args,
                        requires_grad_arg=len(self.arg_names) - 1 if self.forward_of is not None else -1)

    @property
    def sources(self) -> tuple:
        """The user functions a trace runs, whose lines name plan steps and
        errors: the body (a gradient op's: the backwards it runs; a forward op's: the op's body) and setup_context."""
        if self.gradient_of is not None:
            return (*self.fn.sources, self.fn)
        if self.forward_of is not None:
            return (self.forward_of.fn, self.fn)
        return (self.fn,) if self.setup_context_fn is None else (self.fn, self.setup_context_fn)

    def __call__(self, *args, **kwargs):
        return self.overload(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<torch_tile op {self.qualname}{self.schema}>"

    @property
    def plan_count(self) -> int:
        """Launch plans traced so far (one per dtype/rank/branch case)."""
        return _C.plan_count(self.qualname)

    @_interpreter_exit.work
    def trace(self, *args, device: Optional[torch.device] = None, **kwargs) -> _C.LaunchPlan:
        """The launch plan for these arguments (what the C++ runtime receives;
        see ``torch_tile._plan``); ``device`` overrides the device the body sees
        (default: the tensors'). Arguments as for calling the op (defaults
        filled in, keyword-only ones by name). Where the body does what no plan
        holds, the TraceError that says why (a call with these arguments runs
        the body instead: see ``fallback`` in :func:`torch_tile.op`)."""
        self._check_call(args, kwargs)
        return self._traced(Tracer(self.traced_op(), self._arguments(args, kwargs), device), fall_back=False)

    def _check_call(self, args: tuple, kwargs: dict) -> None:
        """A TypeError, as calling the op raises one, for arguments its schema does not take."""
        names = [name for name, _ in self._defaults]
        missing = [name for name in names[len(args):] if name in self._required and name not in kwargs]
        unknown = [name for name in kwargs if name not in names[len(args):]]
        if len(args) > len(names) or missing or unknown:
            raise TypeError(f"{self.qualname}: expected the arguments of {self.schema}; got {len(args)} positional "
                            f"and keyword(s) {sorted(kwargs)}" + (f" (missing: {', '.join(missing)})" if missing
                                                                 else ""))

    def shape_plan(self, args: tuple, device: torch.device) -> _C.LaunchPlan:
        """The plan for arguments in schema order, traced for its shapes only
        (the fake implementation's: no BackwardSpec, so no gradient op is made);
        a fallback plan where the body cannot be one."""
        return self._traced(Tracer(self.traced_op(), args, device, backward=False))

    def plans(self) -> list:
        """Copies of the launch plans the native path has (one per traced case; a fallback plan's ``fallback``
        says why its calls run the body in Python)."""
        return _C.plans_of(self.qualname)

    def export_plans(self, plans: Optional[list] = None) -> bytes:
        """The op's signature and plans as versioned, checksummed bytes, which
        C++ reads without Python (docs/ARCHITECTURE.md, "Serialized plans").
        ``plans``: the native path's own (default), or plans from :meth:`trace`
        (which needs no GPU)."""
        return _C.export_plans(self.qualname, plans)

    def load_plans(self, data: bytes) -> int:
        """Adds plans exported from this op (same name and schema) so that the
        cases they cover run without tracing; returns how many. The kernels they
        name must be registered in this process (ValueError otherwise)."""
        return _C.install_plans(self.qualname, data)

    def clear_plans(self) -> None:
        """Forgets the native path's plans: the next call of each case traces
        again (compiled variants stay cached)."""
        _C.clear_plans(self.qualname)

    def as_call(self, values) -> tuple[tuple, dict]:
        """One value per schema argument as a call takes them: positional, then keyword-only ones by name."""
        n = len(values) - len(self.kwarg_only)
        return tuple(values[:n]), dict(zip(self.kwarg_only, values[n:]))

    def call_body(self, values) -> object:
        """Runs ``fn`` on one value per schema argument."""
        args, keywords = self.as_call(values)
        result = self.fn(*args, **keywords)
        if self.gradient_of is not None and self.num_returns == 1:  # its body returns one gradient per argument
            (result,) = result
        return result

    def _arguments(self, args: tuple, kwargs: dict) -> tuple:
        """A Python kernel's arguments in schema order, defaults filled in
        (torch passes keyword-only ones by name and may leave defaults out)."""
        return (*args, *(kwargs.get(name, default) for name, default in self._defaults[len(args):]))

    # Called by C++ (GIL held) when no plan matches; the dispatcher's stack
    # carries a dtype as its ScalarType code.
    @_entry
    def _trace(self, args: tuple, may_fall_back: bool) -> _C.LaunchPlan:
        try:
            # A gradient op's and a forward op's plans keep nothing for a backward of their own.
            backward = self.forward_of is None and self.gradient_of is None
            return self._traced(Tracer(self.traced_op(), self._values(args), backward=backward),
                                fall_back=may_fall_back, may_leave=may_fall_back)
        except TraceError as e:
            if self.gradient_of is not None:  # the backward cannot be a plan: it runs eagerly from now on
                self._runs_eagerly(e)
            raise

    def _run(self, tracer: Tracer) -> _C.LaunchPlan:
        """``tracer``'s trace; a forward op's with autograd's dispatch keys, whoever asked for it (its CUDA kernel
        runs below them), as the run and the trace its tape's layout comes from see them (see _dispatch_keys.py)."""
        if self.forward_of is None:
            return tracer.run()
        with with_autograd_keys():
            return tracer.run()

    def _traced(self, tracer: Tracer, fall_back: bool = True, may_leave: bool = True) -> _C.LaunchPlan:
        """``tracer``'s plan; where the body does what no plan holds, a fallback plan (if ``fall_back`` and the op
        allows it). ``may_leave``: whether the plan may have data checks (calls that fail one run the body)."""
        body_error = None  # what the body itself raised for this call while its data values were learned
        try:
            try:
                plan = self._run(tracer)
            except NeedsDataValues:  # learn what the body reads from this call's data, then trace again
                # As a call that runs the body runs it: with the caller's autograd (a body may take gradients).
                # A backward may write what it is given in place (a gradient, a saved buffer): a gradient op's run
                # learns from copies of all its tensors.
                args = tracer.call[1]
                written = self.mutated_args if self.gradient_of is None else \
                    [i for i, v in enumerate(args) if isinstance(v, torch.Tensor)]
                try:
                    values = learn_data_values(args, written, lambda args: _fallback.run_body(self, args),
                                               _C.run_as_the_caller)
                except TraceError:  # nothing to learn from (meta tensors): as any trace that fails
                    raise
                except Exception as e:
                    body_error = e
                    raise
                again = tracer.again(values)
                tracer.release()
                tracer = again
                plan = self._run(tracer)
            tracer.check_own_call(plan)
            if plan.checks and not may_leave:
                raise tracer.error(f"the body decides on values read from the data (`{plan.checks[0].condition.text}`"
                                   f" at {plan.checks[0].site}), and calls that decide otherwise could not run it")
        except Exception as e:
            if e is body_error:  # the call's own error (an assert on its data): no plan is made of it
                raise
            if not (fall_back and _fallback.may_fall_back(self, e)):
                _fallback.name_the_op(e, self, "traced into a launch plan")
                raise
            plan = tracer.fallback_plan(_fallback.reason(self, e))
        finally:
            tracer.release()
        if self.body_calls_function is None:
            self.body_calls_function = False  # a trace that saw a Function.apply set it
        elif self.body_calls_function and not self._tape_function and self.backward_fn is None and \
                self.gradient_of is None and self.forward_of is None:
            # Its calls that need a gradient may now run natively (the plan's tape), the others through Python.
            self._tape_function = _training.tape_function(self)
            _C.set_backward(self.qualname, _entry(_autograd_apply(self, self.autograd_function, differentiable=False)))
            _functorch.route(self, self._lib, self._lib_name)
        return plan

    def differentiates_itself(self, args: tuple) -> bool:
        """Whether calls that need a gradient run the body under autograd: an op with no registered backward whose
        body calls an autograd.Function gets that Function's own backward (learned from a trace of ``args``, the
        dispatcher's arguments, if none has run)."""
        if self.backward_fn is not None:
            return False
        if self.body_calls_function is None:
            _training.traced_as_own_work(self, self._values(args), backward=False)  # learns it; the plan is not kept
        return bool(self.body_calls_function)

    def apply_functions(self, args: tuple) -> object:
        """A call that needs a gradient of an op whose body applies autograd.Functions, through Python: their tape
        (_training.py: the forward op, then the gradient op), or where the plan's gradient cannot be a tape, the
        body under autograd (the Functions record their own backwards, as when the library is called directly;
        counted as a fallback call)."""
        values = self._values(args)
        tape, why = _training.tape_call(self, values) if self.num_returns else (None, "the op returns nothing")
        if tape is not None:
            return _training.apply_tape(self, self._tape_function, args, tape)
        result = _training.run_body_differentiated(self, values, why)
        _C.count_fallback_call()
        self._fell_back(f"calls that need a gradient run the body under autograd: {why}")
        return result

    def _values(self, args: tuple) -> tuple:
        """Arguments from the dispatcher's stack as the body sees them."""
        if not self._dtype_args:
            return tuple(args)
        values = list(args)
        for i in self._dtype_args:
            values[i] = _python_value(values[i], self.arg_kinds[i])
        return tuple(values)

    # Called by C++ (GIL held) for calls a fallback plan selects.
    @_entry
    def _fallback_call(self, args: tuple, reason: str) -> object:
        # The CUDA kernel's calls: the C++ caller checks the result against the schema.
        result = _fallback.body_result(self, self._values(args), on_cpu=False)
        self._fell_back(reason)  # after the body ran: its own errors are not a fallback's
        return result

    def _fell_back(self, reason: str, warn: bool = True) -> None:
        count = self.fallback_calls.get(reason)
        if count is None and warn:
            _fallback.warn_once(self, reason)
        self.fallback_calls[reason] = (count or 0) + 1

    def _runs_eagerly(self, error: TraceError) -> None:
        """A gradient op whose backward no plan holds: its calls run the body from now on (C++ warns once)."""
        self._eagerly_because = str(error)
        _C.run_gradient_op_eagerly(self.qualname, self._eagerly_because)

    def _count_eager_run(self) -> None:
        """A call of a gradient op that runs its body because no plan holds it: a fallback call of the op it
        differentiates (explain lists it)."""
        _C.count_fallback_call()
        self.gradient_of._fell_back(f"the backward runs in Python: {self._eagerly_because}", warn=False)

    def _run_eagerly(self, *args):
        """A gradient op's body run eagerly by the native node: under create_graph (the backward is itself
        differentiated), or because no plan holds it (counted)."""
        if self._eagerly_because is not None and not torch.is_grad_enabled():
            self._count_eager_run()
        return self.fn(*args)

    @_entry
    def _fake(self, *args, **kwargs):
        return fake_call(self, self._arguments(args, kwargs))

    @_entry
    def _interpret(self, *args, **kwargs):
        # Trace too (cheap next to the interpreter), so that a body the CUDA
        # path cannot take fails here with the same TraceError (the tracer
        # checks the arguments as the CUDA kernel does).
        args = self._arguments(args, kwargs)
        try:
            plan = self._traced(Tracer(self.traced_op(), args, backward=False))
        except TraceError as e:
            if self.gradient_of is None:
                raise
            # A backward no plan holds runs eagerly, as the native node runs it (warned once, counted).
            self._runs_eagerly(e)
            self._count_eager_run()
            plan = None
        with launch_mode(InterpretLaunches(self)), _fallback.NamingTheOp(self, "run by Triton's interpreter on CPU"):
            # A fallback's body runs as outside torch_tile, with autograd (the CUDA path's does too).
            result = (_C.run_as_the_caller(lambda: self.call_body(args)) if plan is not None and plan.fallback
                      else self.call_body(args))
        if self.gradient_of is None:  # outputs as the CUDA path returns them (a gradient op's are gradients)
            result = _fallback.checked_result(self, args, result)
        if plan is not None and plan.fallback:
            _C.count_fallback_call()
            self._fell_back(plan.fallback)
        return result


def _returned_argument(qualname: str, parsed, ret) -> int:
    """The index of the written argument whose alias set ``ret`` declares (-1: none, a new tensor)."""
    if ret.alias_info is None:
        return -1
    for i, a in enumerate(parsed.arguments):
        if a.alias_info is not None and a.alias_info.is_write and a.alias_info.before_set == ret.alias_info.before_set:
            if not ret.alias_info.is_write:
                break
            return i
    raise TypeError(f"torch_tile.op {qualname}: a return annotated {ret.alias_info.before_set} must be a written "
                    "argument itself, annotated alike (`(Tensor(a!) x) -> Tensor(a!)`)")


def _python_value(value, kind) -> object:
    """An argument as the body sees it: schemas and the dispatcher's stack carry a dtype as its ScalarType code."""
    if kind in (ArgKind.DTYPE, ArgKind.OPTIONAL_DTYPE) and isinstance(value, int):
        return _C.dtype_of_code(value)
    return value


def _autograd_function(op: TileOp, backward: Optional[Callable], setup_context: Optional[Callable]) -> type:
    """The op as a ``torch.autograd.Function``: its backward is ``backward`` (None: one that raises, naming the
    op), its vmap rule and its missing forward-mode derivative are ``_functorch``'s."""
    num_args = len(op.arg_names)
    mutated = op.mutated_args

    def forward(*args):
        with torch._C._AutoDispatchBelowAutograd():
            out = op.overload(*args)
        if not mutated:
            return out
        # autograd.Function wants tensors it marks dirty among its outputs.
        outs = () if out is None else (out if isinstance(out, tuple) else (out,))
        return (*outs, *(args[i] for i in mutated))

    def setup(ctx, inputs, output):
        if mutated:
            ctx.mark_dirty(*(inputs[i] for i in mutated))
        if setup_context is not None:
            setup_context(ctx, inputs, output)

    def backward_fn(ctx, *grads):
        if backward is None:
            raise RuntimeError(
                f"{op.qualname} has no backward: a tensor it produced or wrote was differentiated. Declare one "
                f"with `{op.name}.register_autograd(backward, setup_context=...)` (tile ops in the backward run "
                "natively), or call the op on tensors that do not require grad")
        result = backward(ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != num_args:
            raise RuntimeError(
                f"{op.qualname}: backward returned {len(result)} gradient(s), expected {num_args} (one per "
                f"input: {', '.join(op.arg_names)}; None for non-tensor inputs)")
        return result

    return type(f"{op.name}_autograd", (torch.autograd.Function,), {
        "forward": staticmethod(forward),
        "setup_context": staticmethod(setup),
        "backward": staticmethod(backward_fn),
        "vmap": staticmethod(_functorch.vmap_rule(op)),
        "jvp": staticmethod(_functorch.no_forward_derivative(op)),
    })


def _autograd_apply(op: TileOp, function: type, differentiable: bool) -> Callable:
    """The callable the op's C++ Autograd kernel runs for calls that need a gradient: ``function`` (the op's
    autograd.Function) applied; for an op that is not ``differentiable`` (no registered backward), the body where
    it differentiates itself."""
    if op.returns_list:
        return _refusing_gradients_of_list_returns(op)
    mutated = op.mutated_args
    apply = _fast_apply(function)
    lists = [i for i, k in enumerate(op.arg_kinds) if k == ArgKind.TENSOR_LIST]
    if lists:
        apply = _refusing_list_gradients(op, lists, apply)
    if mutated:
        apply = _dropping_written(op, apply)
    return apply if differentiable else _differentiating_through_the_body(op, apply)


def _dropping_written(op: TileOp, apply: Callable) -> Callable:
    """The op's results from its autograd.Function's, which end with the written arguments it marks dirty."""
    num_outs = op.num_returns

    def apply_and_drop_written(*args):
        result = apply(*args)
        if num_outs == 0:
            return None
        return result[0] if num_outs == 1 else result[:num_outs]

    return apply_and_drop_written


def _differentiating_through_the_body(op: TileOp, apply: Callable) -> Callable:
    """For an op with no registered backward: a call that needs a gradient of a body that applies
    autograd.Functions goes through them (``TileOp.apply_functions``); any other runs ``apply``, whose backward
    says the op has none."""
    def call(*args):
        learning = op.body_calls_function is None
        if not op.differentiates_itself(args):
            return apply(*args)
        if learning and _training.native_node_may_take(args):
            # The trace that learned it enabled the native node: this call is dispatched again to take it, as
            # later calls do (the C++ path returns here, learned, if its plan's tape cannot serve).
            positional, keywords = op.as_call(args)
            return op.overload(*positional, **keywords)
        return op.apply_functions(args)

    return call


def _refusing_gradients_of_list_returns(op: TileOp) -> Callable:
    """autograd.Function does not track tensors returned inside a list: a
    call that needs a gradient is refused rather than silently cut off."""
    def refuse(*args):
        raise NotImplementedError(
            f"{op.qualname} returns list[Tensor], and tile ops do not differentiate through list returns: call it "
            "on tensors that do not require grad (torch.no_grad()), or return a tuple of tensors")

    return refuse


def _refusing_list_gradients(op: TileOp, lists: list[int], apply: Callable) -> Callable:
    """autograd.Function does not see tensors inside lists: a gradient through
    one would silently be missing, so such calls are refused."""
    def checked(*args):
        for i in lists:
            if any(t.requires_grad for t in args[i]):
                raise NotImplementedError(
                    f"{op.qualname}: argument '{op.arg_names[i]}' (a list[Tensor]) holds a tensor that requires "
                    "grad; tile ops do not differentiate through list[Tensor] arguments: pass it as a Tensor "
                    "argument, or detach it")
        return apply(*args)

    return checked


# The C entry of autograd.Function.apply. Before torch 2.12, Function.apply is a
# Python wrapper that binds default arguments with inspect.signature on every
# call (several µs; our forwards take *args, so there is nothing to bind) and
# unwraps dead functorch wrappers; it is kept for calls under functorch transforms.
_NATIVE_APPLY = torch._C._FunctionBase.__dict__["apply"]


def _fast_apply(function: type) -> Callable:
    native = _NATIVE_APPLY.__get__(None, function)
    if function.apply == native:  # torch >= 2.12: Function.apply is already the C entry
        return function.apply

    def apply(*args):
        if torch._C._are_functorch_transforms_active():
            return function.apply(*args)
        return native(*args)

    return apply


def op(qualname: str, fn: Optional[Callable] = None, *, mutates_args: Union[str, Iterable[str]] = (),
       schema: Optional[str] = None, fallback: bool = True):
    """Registers a tile op, in the style of ``torch.library.triton_op``.

    ``fn`` is written as for ``torch.library.triton_op``: it allocates outputs
    (``torch.empty_like``, ``torch.empty(..., device=x.device)``...) and launches
    ``@triton.jit`` kernels with ``kernel[grid](...)``; ordinary Python on sizes
    (``if``, ``min``/``max``, ``triton.cdiv``, ``triton.next_power_of_2``,
    ``num_warps=4 if BLOCK < 2048 else 8``) is allowed and becomes guards.

    Args:
        qualname: ``"namespace::name"``; the op appears as ``torch.ops.namespace.name``. With an overload
            name, ``"namespace::name.overload"``, as ``torch.ops.namespace.name.overload`` (see
            ``_op_names`` for the names refused).
        mutates_args: names of tensor arguments the kernels write (as in
            ``torch.library.custom_op``).
        schema: explicit schema string such as ``"(Tensor x, int n) -> Tensor"``;
            inferred from type hints when omitted.
        fallback: where the body does what no launch plan can hold, the
            calls concerned run the body in Python, warned once and counted
            (``runtime_counters()["fallback_calls"]``), as a torch.compile
            graph break; ``False`` raises the ``TraceError`` instead.

    Returns:
        a :class:`TileOp` (or a decorator producing one).
    """
    if fn is None:
        return lambda f: TileOp(qualname, f, mutates_args, schema, fallback=fallback)
    return TileOp(qualname, fn, mutates_args, schema, fallback=fallback)
