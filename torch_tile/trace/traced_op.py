"""What a trace needs of an op, and nothing more: the tracer never holds the op itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence


@dataclass(frozen=True)
class TracedOp:
    """One op as its traces see it (the op layer makes one per trace, ``TileOp.traced_op()``).

    ``arg_kinds``: the schema arguments' ``_C.ArgKind``; ``mutated_args``: indices of the arguments it declares
    written; ``sources``: the user functions whose lines name plan steps and errors (the body, setup_context, a
    gradient op's backward); ``call_body(values)``: the body on one value per schema argument;
    ``is_gradient_op``: the op is the traced backward of another (a non-differentiable output's gradient may be
    None); ``backward_fn`` / ``setup_context_fn``: its registered autograd functions (native autograd traces
    them); ``gradient_op_name(layout)``: the qualname of the op that computes its gradient for a ``SavedLayout``
(made on first use); ``function_applied()``: called when the body runs an ``autograd.Function``'s ``apply``."""

    qualname: str
    arg_names: tuple[str, ...]
    arg_kinds: tuple[Any, ...]
    num_returns: int
    returns_list: bool
    mutated_args: tuple[int, ...]
    sources: tuple[Callable, ...]
    call_body: Callable[[Sequence[Any]], Any]
    is_gradient_op: bool = False
    backward_fn: Optional[Callable] = None
    setup_context_fn: Optional[Callable] = None
    gradient_op_name: Optional[Callable[[Any], str]] = None
    function_applied: Callable[[], None] = lambda: None
    returned_args: tuple[int, ...] = ()  # per return: the argument the schema says it is (`Tensor(a!)`), or -1
    requires_grad_arg: int = -1  # a forward op's: the int argument whose bits say which tensors require a gradient
