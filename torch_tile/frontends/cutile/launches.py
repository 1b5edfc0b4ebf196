"""cuTile's ``ct.launch`` while op bodies run: to the thread's launch mode (``_launch_mode`` turns this routing
on while bodies run). Only where the program imported ``cuda.tile``: nothing is imported here, and a program
that imports it late is routed from the next body on."""

from __future__ import annotations

import sys
from typing import Any, Optional

from ..._launch_mode import LaunchMode, add_routing, current_mode

_cutile_original: Optional[Any] = None  # cuda.tile.launch while bodies run, if cuda.tile is imported


def _cutile_router(original):
    """``ct.launch(stream, grid, kernel, args)`` as cuTile users write it: to this thread's mode in a body."""
    def launch(stream, grid, kernel, kernel_args, /, **options):
        mode: Optional[LaunchMode] = current_mode()
        if mode is None:
            return original(stream, grid, kernel, kernel_args, **options)
        return mode.launch(kernel, grid, kernel_args, {"stream": stream, **options})
    return launch


def route(on: bool) -> None:
    """Routes ``cuda.tile.launch`` (only where the program imported cuda.tile: nothing is imported here)."""
    global _cutile_original
    ct = sys.modules.get("cuda.tile")
    if on and ct is not None and _cutile_original is None:
        _cutile_original = ct.launch
        ct.launch = _cutile_router(_cutile_original)
    elif not on and _cutile_original is not None:
        ct.launch = _cutile_original
        _cutile_original = None


add_routing(route)
