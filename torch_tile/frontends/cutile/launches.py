"""cuTile's ``ct.launch`` while op bodies run: to the thread's launch mode (``_launch_mode`` turns this routing
on while bodies run). Only where the program imported ``cuda.tile``: nothing is imported here, and a program
that imports it late is routed from the next body on."""

from __future__ import annotations

from typing import Optional

from ..._launch_mode import LaunchMode, add_routing, attribute_routing, current_mode


def _cutile_router(original):
    """``ct.launch(stream, grid, kernel, args)`` as cuTile users write it: to this thread's mode in a body."""
    def launch(stream, grid, kernel, kernel_args, /, **options):
        mode: Optional[LaunchMode] = current_mode()
        if mode is None:
            return original(stream, grid, kernel, kernel_args, **options)
        return mode.launch(kernel, grid, kernel_args, {"stream": stream, **options})
    return launch


add_routing(attribute_routing("cuda.tile", lambda ct: ct, "launch", _cutile_router))
