"""The cuTile frontend as torch_tile's tracer sees it: ``ct.launch(stream, grid, kernel, args)`` of a
``@ct.kernel``."""

from __future__ import annotations

from typing import Any

from ..frontend import Frontend, register_frontend
from . import launches, record  # noqa: F401  (launches: routes ct.launch while bodies run)
from .kernels import is_kernel


class CutileFrontend(Frontend):
    name = "cutile"

    def is_kernel(self, obj: Any) -> bool:
        return is_kernel(obj)

    def record_launch(self, tracer, kernel, grid, args, kwargs):
        return record.record_launch(tracer, kernel, grid, args, kwargs), None  # no write analysis


FRONTEND = register_frontend(CutileFrontend())
