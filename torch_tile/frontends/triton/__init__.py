"""The Triton frontend: ``@triton.jit`` (and ``@triton.autotune``) kernels
launched in op bodies.

- ``kernels``: stable ids of kernels and launch configurations;
- ``record``: a traced launch becomes a plan launch step;
- ``frontend``: the ``Frontend`` object the tracer asks (launches, writes);
- ``autotune``: the config an autotuner picks for a call, once per key; ``tuning``: its run in a trace;
- ``compile``: a variant compiled from its specialization key (and the disk cache);
- ``writes``: which tensor parameters a kernel stores to (for ``mutates_args``);
- ``interpret``: the CPU debug path (Triton's interpreter).
"""

from .compile import compile_count, compile_variant, register
from .frontend import FRONTEND

__all__ = ["FRONTEND", "compile_count", "compile_variant", "register"]
