"""The tracer: an op body run once on stand-ins becomes a launch plan (``_plan.LaunchPlan``).

``Tracer(op, args).run()`` is the whole public face: the op layer calls it with a ``TracedOp``, what a trace needs
of an op (its schema's facts, its body, its autograd functions), never the op itself; a body that reads its
tensors' data makes the trace raise ``NeedsDataValues``, and the op layer traces again with what
``learn_data_values`` recorded of one run of the body. Inside: ``stand_ins`` and ``expr`` (what the body's
arguments are while traced), ``symbolic_shapes`` and ``aten_record`` (torch calls on shadows, recorded as view and
ATen steps), ``data_reads`` (values and sizes read from the data), ``host_values`` (tensors made from host values),
``inlined_calls`` and ``escapes`` (what a body keeps past the trace), ``backward`` (native autograd's traced
parts), ``call_arguments`` (the checks every path applies to a call's arguments), ``state`` (the tracer active on
this thread).
"""

from .data_reads import NeedsDataValues, learn_data_values
from .traced_op import TracedOp
from .tracer import Tracer

__all__ = ["NeedsDataValues", "TracedOp", "Tracer", "learn_data_values"]
