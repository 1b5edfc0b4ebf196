"""Frontends: where kernels come from. Each turns its kernels into plan launch
steps while a body is traced, and compiles a kernel variant from its
specialization key when the native runtime asks (registered with
``_C.register_frontend``): ``triton`` (``@triton.jit`` kernels) and ``cuda``
(CUDA C++ compiled with NVRTC)."""
