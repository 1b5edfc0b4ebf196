"""Calls that need a gradient of an op whose body applies autograd.Functions, where the native C++ node cannot
take them: CPU tensors (Triton's interpreter), torch.compile's tracing, torch.func transforms, tensor subclasses.

They use the same tape (trace/functions.py) through Python: the op's *forward op* (``<ns>_fwd::<name>``, the
body returning, after its outputs, the tensors its Functions kept) runs the forward; an autograd.Function saves
what the gradient needs and its backward calls the gradient op the native node calls. Under torch.compile the
graph then holds both tile ops (native plans at run time); on CPU both run in Triton's interpreter.

Where the op's gradient cannot be a tape (trace/functions.py says why), the body runs under autograd: the
library's Functions record their own backwards, as when the library is called directly (on CPU, their backwards'
kernels run in Triton's interpreter too). Those calls are counted as fallback calls and listed by
``torch_tile.explain``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

import torch
from torch._functorch.pyfunctorch import temporarily_clear_interpreter_stack
from torch._subclasses.fake_tensor import is_fake
from torch._subclasses.functional_tensor import FunctionalTensor
from torch.utils._python_dispatch import _disable_current_modes

from . import _fallback, _functorch
from ._dispatch_keys import with_autograd_keys
from ._errors import CallError
from ._fake import all_hinted, hinted, scalars_of
from ._launch_mode import SkipLaunches, launch_mode
from .frontends.frontend import InterpretLaunches
from .trace import Tracer
from .trace.call_arguments import flat_arguments
from .trace.expr import evaluate
from .trace.functions import EagerTape, TapeLayout, differentiable, python_ints, recording_functions
from .trace.inlined_calls import inlined_calls
from .trace.state import current_tracer
from .trace.tracer import returned

if TYPE_CHECKING:
    from ._op import TileOp


# The forward op's last argument: which tensor arguments require a gradient, a bit each.
REQUIRES_GRAD_ARG = "tape_requires_grad"


def forward_body(op: "TileOp") -> Callable:
    """The forward op's body: ``op``'s body, returning its outputs and then the tensors its Functions kept that
    are neither arguments nor outputs (``TapeLayout.sources``' extras), as a list."""
    num_args = len(op.arg_names)

    def body(*values, **keywords):
        mask = keywords.pop(REQUIRES_GRAD_ARG)
        values = (*values, *keywords.values())  # the op's arguments in its schema's order
        tracer = current_tracer()
        if tracer is not None:
            outputs = returned(op.call_body(values))
            return [*outputs, *tracer.functions.extras(outputs, num_args)]
        # A real run: the arguments need a gradient as the mask says, so that autograd says which Functions take
        # one (as the trace's tape decides); the results leave without autograd.
        leaves = tuple(v.detach().requires_grad_(bool(mask >> i & 1)) if isinstance(v, torch.Tensor) and
                       differentiable(v.dtype) else v for i, v in enumerate(values))
        tape = EagerTape()
        with with_autograd_keys(), inlined_calls(), recording_functions(tape), torch.enable_grad():
            result = op.call_body(leaves)
        outputs = returned(result)
        extras = tape.extras(leaves, outputs)  # told from the outputs by identity, before they are detached
        return [*(o.detach() if isinstance(o, torch.Tensor) else o for o in outputs), *extras]

    return body


@dataclass(frozen=True)
class TapeCall:
    """What one call's gradient needs on the Python path: the plan's tape layout, its gradient op, and where the
    ints and floats the plan keeps come from (expressions over the arguments; float arguments or constants)."""
    layout: TapeLayout
    gradient_op: "TileOp"
    ints: tuple
    float_args: tuple
    float_values: tuple

    def kept_ints(self, args: tuple, list_items: list) -> list:
        tensors = [*args, *list_items]
        return [evaluate(code, tensors, scalars_of(args)) for code in self.ints]

    def kept_floats(self, args: tuple) -> list:
        return [args[a] if a >= 0 else v for a, v in zip(self.float_args, self.float_values)]


def _real(t: torch.Tensor) -> bool:
    """A tensor with data of its own (not fake, functional, meta or a torch.func transform's wrapper)."""
    return not is_fake(t) and t.device.type != "meta" and not torch._is_functional_tensor(t) and \
        not torch._C._functorch.is_functorch_wrapped_tensor(t)


_PLAIN_DISPATCH = torch.Tensor.__torch_dispatch__  # parameters have it; DTensor and other subclasses their own


def native_node_may_take(args: tuple) -> bool:
    """Whether the C++ node may take a call of these dispatcher arguments: real CUDA tensors, in no dispatch mode
    (torch.compile's tracing and tensor subclasses take the Python path)."""
    tensors = [t for t in flat_arguments(args) if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(t.is_cuda and _real(t) and type(t).__torch_dispatch__ is _PLAIN_DISPATCH
                                 for t in tensors) and \
        not torch._C._is_torch_function_mode_enabled() and torch._C._len_torch_dispatch_stack() == 0


def traced_as_own_work(op: "TileOp", values: tuple, backward: bool = True):
    """``op``'s plan for ``values`` (as the body sees them, with size hints), traced as torch_tile's own work: not
    under the caller's dispatch modes (torch.compile's proxy and fake modes are active where autograd calls this)
    nor torch.func transforms' (their wrapped tensors are traced as meta tensors of the same sizes)."""
    tensors = [t for t in flat_arguments(values) if isinstance(t, torch.Tensor)]
    device = tensors[0].device if tensors else None
    real = all(_real(t) for t in tensors)
    with _disable_current_modes(), temporarily_clear_interpreter_stack():
        return op._traced(Tracer(op.traced_op(), values if real else tuple(hinted(v) for v in values), device,
                                 backward=backward))


def tape_call(op: "TileOp", values: tuple) -> tuple[Optional[TapeCall], str]:
    """The tape of the plan these arguments (as the body sees them) select, or (None, why the Python path runs
    the body under autograd instead)."""
    if not all_hinted(values):
        return None, "sizes decided by the data (no size hints)"
    plan = traced_as_own_work(op, values)
    spec = plan.backward
    if plan.fallback:
        return None, plan.fallback
    if spec is None:
        return None, "the body returns its inputs (or views of them)"
    if not spec.gradient_op:
        return None, spec.reason
    gradient_op = op.gradient_op_named(spec.gradient_op)
    num_inputs = len(op.arg_names) + sum(len(v) for v in values if isinstance(v, (list, tuple)))
    if not python_ints(spec.ints, num_inputs):
        return None, "the Functions keep values read from the data, which the Python path cannot recompute"
    return TapeCall(gradient_op.layout, gradient_op, tuple(list(e.code) for e in spec.ints), tuple(spec.float_args),
                    tuple(spec.float_values)), ""


def run_forward_op(op: "TileOp", args: tuple, call: TapeCall) -> list:
    """The forward op on ``args`` (in schema order): the outputs, then the kept tensors that are neither arguments
    nor outputs. Which arguments require a gradient is the call's the layout was traced for (which Functions
    autograd records depends on it), whatever a transform or torch.compile's tracing makes of the tensors below."""
    mask = sum(1 << i for i, value in enumerate(call.layout.arguments) if value is not None)
    positional, keywords = op.as_call(args)
    return op.forward_op().overload(*positional, **keywords, **{REQUIRES_GRAD_ARG: mask})


def tape_function(op: "TileOp") -> type:
    """The autograd.Function of ``op``'s calls on the Python path: applied to the call's arguments and its
    ``TapeCall``."""
    n = op.num_returns

    def forward(*inputs):
        *args, call = inputs
        return tuple(run_forward_op(op, tuple(args), call))

    def setup_context(ctx, inputs, output):
        *args, call = inputs
        args = tuple(args)
        outputs, extras = output[:n], output[n:]
        if len(extras) != call.layout.num_extras:
            raise RuntimeError(f"{op.qualname}: the forward op returned {len(extras)} kept tensor(s); the plan's "
                               f"tape keeps {call.layout.num_extras}")
        ctx.mark_non_differentiable(*extras)
        ctx.set_materialize_grads(False)  # each Function of the tape materializes its own
        take = {"arg": args, "output": outputs, "extra": extras}
        ctx.save_for_backward(*(take[kind][i] for kind, i in call.layout.sources))
        list_items = [t for a in args if isinstance(a, (list, tuple)) for t in a]
        ctx.kept = (call.gradient_op, call.kept_ints(op._values(args), list_items), call.kept_floats(args))

    def backward(ctx, *grads):
        gradient_op, ints, floats = ctx.kept
        mask = sum(1 << i for i, need in enumerate(ctx.needs_input_grad[:-1]) if need)
        result = gradient_op.overload(*ctx.saved_tensors, ints, *floats, *grads[:n], mask)
        return (*(result if isinstance(result, tuple) else (result,)), None)

    return type(f"{op.name}_functions", (torch.autograd.Function,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward), "vmap": staticmethod(_functorch.vmap_rule(op)),
        "jvp": staticmethod(_functorch.no_forward_derivative(op))})


def apply_tape(op: "TileOp", function: type, args: tuple, call: TapeCall):
    """``op`` on ``args`` through its tape ``function`` (``tape_function``): the op's outputs."""
    result = function.apply(*args, call)
    return result[0] if op.num_returns == 1 else tuple(result[:op.num_returns])


def _graph_traced(tensors: list) -> bool:
    """Whether AOTAutograd (torch.compile past Dynamo) is tracing the call into a graph: there a body run under
    autograd would leave its kernels out of the graph."""
    return any(isinstance(t, FunctionalTensor) for t in tensors) or \
        torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.PROXY) is not None


def run_body_differentiated(op: "TileOp", values: tuple, why: str):
    """The body under autograd, its Functions recording their own backwards (``why``: why not a tape). On CPU
    tensors their kernels, forward and backward, run in Triton's interpreter: the body's graph is differentiated
    inside an autograd.Function whose backward enters the interpreter (autograd calls backwards after the body
    returned, outside any launch mode)."""
    tensors = [t for t in flat_arguments(values) if isinstance(t, torch.Tensor)]
    if any(is_fake(t) for t in tensors):
        # torch.compile cannot put such a call in a graph: Dynamo breaks the graph before it (fullgraph=True says
        # why); AOTAutograd, past Dynamo, cannot break it.
        message = (f"{op.qualname}: calls of it that need a gradient run its body and its Functions' backwards "
                   f"in Python ({why}), which a compiled graph cannot hold; call it outside the compiled region "
                   "(torch.compiler.disable), or give the op a native backward (torch_tile.explain(op) says why not)")
        if _graph_traced(tensors):
            raise CallError(message)
        if torch._guards.TracingContext.try_get() is not None:
            raise torch._dynamo.exc.Unsupported(message, "a torch_tile op whose backward runs in Python")
        # A fake run of the program's own (a FakeTensorMode): the body on the fakes, launches skipped.
        with launch_mode(SkipLaunches()), torch.enable_grad():
            return op.call_body(values)
    if not any(t.device.type == "cpu" for t in tensors):
        return _fallback.run_body(op, values, on_cpu=False)
    differentiable_values = [v for v in values if isinstance(v, torch.Tensor) and v.requires_grad]
    result = _Interpreted.apply(op, values, *differentiable_values)
    return result[0] if op.num_returns == 1 else result


class _Interpreted(torch.autograd.Function):
    """The body on CPU tensors, differentiated by its own graph with Triton's interpreter launching the kernels of
    its Functions' backwards too."""

    @staticmethod
    def forward(ctx, op, values, *differentiable_values):
        inputs = {id(v): v.detach().requires_grad_() for v in differentiable_values}  # one per tensor
        inner = tuple(inputs.get(id(v), v) if isinstance(v, torch.Tensor) else v for v in values)
        with torch.enable_grad():
            result = _fallback.run_body(op, inner, on_cpu=True)
        outputs = returned(result)
        ctx.op, ctx.inputs, ctx.outputs = op, inputs, outputs
        # Per argument position, its tensor's key, or None where the same tensor came before (its gradient is
        # returned once: autograd sums what positions of one tensor get).
        ctx.positions = [id(v) if id(v) not in (id(u) for u in differentiable_values[:k]) else None
                         for k, v in enumerate(differentiable_values)]
        detached = tuple(o.detach() for o in outputs)
        # An output autograd does not track in the body (detached, integer) is none here either, as in eager.
        ctx.mark_non_differentiable(*(d for d, o in zip(detached, outputs) if not o.requires_grad))
        return detached

    @staticmethod
    @torch._disable_dynamo  # autograd calls it; a graph break before it must not make Dynamo trace the interpreter
    def backward(ctx, *grads):
        pairs = [(o, g) for o, g in zip(ctx.outputs, grads) if g is not None and o.requires_grad]
        with launch_mode(InterpretLaunches(ctx.op)):
            found = torch.autograd.grad([o for o, _ in pairs], list(ctx.inputs.values()), [g for _, g in pairs],
                                        allow_unused=True)
        by_tensor = dict(zip(ctx.inputs, found))
        return (None, None, *(None if key is None else by_tensor[key] for key in ctx.positions))
