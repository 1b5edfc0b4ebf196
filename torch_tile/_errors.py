"""Errors of op bodies that a launch plan cannot hold."""


class TraceError(RuntimeError):
    """The op body did something a launch plan cannot hold."""


class OpDefinitionError(TraceError):
    """The body contradicts the op's declaration (the tensors it writes, what it returns): an error on every
    path, never a fallback, as torch.library refuses it too."""


class CallError(TraceError, ValueError):
    """This call cannot run as it is on any path (run in Python, the body would fail too, or compute what no
    kernel wrote): an error, never a fallback. E.g. a new autotuning key during CUDA-graph capture."""


class TraceOverflowError(TraceError, OverflowError):
    """Integer arithmetic in the op body left int64 (the plan's integer type)."""
