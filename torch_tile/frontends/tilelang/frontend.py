"""The TileLang frontend as torch_tile's tracer sees it: a ``JITKernel`` called in a body (``kernel(a, b)``),
each of its device kernels a launch."""

from __future__ import annotations

from typing import Any

from ..frontend import Frontend, register_frontend
from . import record
from .kernels import is_kernel
from .launches import DeviceKernelLaunch


class TileLangFrontend(Frontend):
    name = "tilelang"

    def is_kernel(self, obj: Any) -> bool:
        return isinstance(obj, DeviceKernelLaunch) or is_kernel(obj)

    def record_launch(self, tracer, kernel, grid, args, kwargs):
        if not isinstance(kernel, DeviceKernelLaunch):
            raise tracer.error(f"{kernel!r} launched without its device kernel")
        return record.record_launch(tracer, kernel, grid, args, kwargs), None  # no write analysis


FRONTEND = register_frontend(TileLangFrontend())
