"""The CUDA C++ frontend as torch_tile's tracer sees it: ``CudaKernel`` launches, ``kernel[grid, block](...)``."""

from __future__ import annotations

from typing import Any

from ..frontend import Frontend, register_frontend
from . import record
from .compile import CudaKernel


class CudaFrontend(Frontend):
    name = "cuda"

    def is_kernel(self, obj: Any) -> bool:
        return isinstance(obj, CudaKernel)

    def record_launch(self, tracer, kernel, grid, args, kwargs):
        options = dict(kwargs)
        block = options.pop("block")
        return record.record_launch(tracer, kernel, grid, block, args, **options), None  # no write analysis


FRONTEND = register_frontend(CudaFrontend())
