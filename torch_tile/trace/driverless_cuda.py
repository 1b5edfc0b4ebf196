"""A CUDA trace on a machine with no CUDA driver (a dry run: tests, bundles exported on a CPU machine). There a
body's ``with torch.cuda.device(x.device):`` (flash-attn's, mamba's, FlagGems' idiom) would raise torch's "Found no
NVIDIA driver" where the call on a GPU selects the tensors' device: the device context selects nothing instead.
Patched process-wide while such traces run, and only where no driver exists, so that no real switch is skipped."""

from __future__ import annotations

import contextlib

import torch

from .. import _process_locks

_originals: dict[str, object] = {}


def _no_switch(device: int) -> int:
    return device


def _apply() -> None:
    for name in ("_exchange_device", "_maybe_exchange_device"):
        _originals[name] = getattr(torch.cuda, name)
        setattr(torch.cuda, name, _no_switch)


def _undo() -> None:
    for name, original in _originals.items():
        setattr(torch.cuda, name, original)
    _originals.clear()


_no_device_switch = _process_locks.ScopedPatch(_apply, _undo)


def device_contexts(device) -> contextlib.AbstractContextManager:
    """The scope of a trace for ``device``: no device switch where it is CUDA and this machine has no driver."""
    if device is not None and device.type == "cuda" and not torch.cuda.is_available():
        return _no_device_switch
    return contextlib.nullcontext()
