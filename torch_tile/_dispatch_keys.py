"""Autograd's dispatch keys, put back where an op's kernel runs below them.

An op's kernels run below autograd (the Autograd kernel excludes its keys; the native node's forward runs below
ADInplaceOrView), while the Python path calls from above. Two things inside a kernel must see the keys as a call
from Python does, since torch decomposes composite operators and makes aliases differently without them
(``w.to(w.dtype)`` is ``w`` itself above ADInplaceOrView, an alias below): a real run of the body that records what
autograd records (the Python path's forward op), and a trace of the forward op, whose kept tensors must be the
ones that run and the tape's trace keep.
"""

from __future__ import annotations

import torch

_AUTOGRAD_KEYS = (torch._C.DispatchKey.ADInplaceOrView, torch._C.DispatchKey.AutogradFunctionality,
                  torch._C.DispatchKey.AutogradOther, torch._C.DispatchKey.AutogradNestedTensor)


def with_autograd_keys():
    """The dispatch keys as they are, but with autograd's (the caller's other keys, its dispatch modes, stay)."""
    exclude = torch._C._dispatch_tls_local_exclude_set()
    for key in _AUTOGRAD_KEYS:
        exclude = exclude.remove(key)
    return torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), exclude)
