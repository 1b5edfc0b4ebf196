"""Errors of op bodies that a launch plan cannot hold."""


class TraceError(RuntimeError):
    """The op body did something a launch plan cannot hold."""


class TraceOverflowError(TraceError, OverflowError):
    """Integer arithmetic in the op body left int64 (the plan's integer type)."""
