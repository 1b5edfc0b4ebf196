"""torch_tile's errors: what a launch plan cannot hold, what a call cannot do, a kernel that failed."""


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


class TraceZeroDivisionError(TraceError, ZeroDivisionError):
    """Integer arithmetic on sizes in the op body divides by zero for this call: the body run in Python raises
    ZeroDivisionError too (which is what a fallback does); the calls whose divisor is not zero trace a plan."""


class KernelError(RuntimeError):
    """A kernel the op launched failed to compile or run (on the CPU path, under Triton's interpreter); the
    message names the op, the kernel and its launch site, and the kernel's own error is the cause."""
