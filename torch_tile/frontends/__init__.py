"""Frontends: where kernels come from. Each turns its kernels into plan launch
steps while a body is traced, and compiles a kernel variant from its
specialization key when the native runtime asks (registered with
``_C.register_frontend``): ``triton`` (``@triton.jit`` kernels) and ``cuda``
(CUDA C++ compiled with NVRTC)."""

from .. import _disk_cache


def stable_id(*parts) -> int:
    """A 63-bit id from the SHA-256 of JSON parts: the same in every process (kernel and launch configuration
    ids, which specialization keys, serialized plans and bundles name)."""
    return int(_disk_cache.content_key(*parts)[:16], 16) >> 1


# A compile callback asked for a configuration this process never traced (frontends' shared message).
UNKNOWN_CONFIG = ("launch configuration {cid} is not known in this process: the plan launching it was not traced "
                  "here (it came from a bundle) and the bundle has no variant for this call's specialization key; "
                  "export the bundle with an example of this call")
