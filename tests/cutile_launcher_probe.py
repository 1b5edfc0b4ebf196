"""Run with tests/libcuda_stub.c's library on LD_LIBRARY_PATH (no GPU): launches tile::softmax_cutile's
kernel with cuTile's own ct.launch for each case of tests/cutile_cases.py, the arguments given as CUDA
array interfaces over fake addresses that keep each tensor's address modulo 64 (its alignment), and prints
one JSON line per case: the repr of the KernelSignature cuTile's launcher asks its kernel to compile for.
The kernel's _compile, which the launcher calls with that signature on a miss, stops the launch there."""

from __future__ import annotations

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cuda.tile as ct  # noqa: E402
from cuda.tile import _execution  # noqa: E402

import cutile_cases  # noqa: E402
from torch_tile.kernels import softmax_cutile  # noqa: E402

TYPESTR = {torch.float32: "<f4", torch.float16: "<f2", torch.bfloat16: "<V2"}


class DeviceArray:
    """``t``'s layout as a CUDA array interface, at a fake address with ``t``'s alignment."""

    def __init__(self, t: torch.Tensor):
        self.__cuda_array_interface__ = {
            "shape": tuple(t.shape), "typestr": TYPESTR[t.dtype], "data": (0x10000000 + t.data_ptr() % 64, False),
            "strides": tuple(s * t.element_size() for s in t.stride()), "version": 3}


class Signature(Exception):
    pass


def stop(self, signature, context, compute_capability=None):
    raise Signature(signature)


_execution.kernel._compile = stop
for x in cutile_cases.inputs("cpu"):
    out = torch.empty(x.shape, dtype=x.dtype)
    try:
        ct.launch(0, (x.shape[0],), softmax_cutile.softmax_rows,
                  (DeviceArray(x), DeviceArray(out), 1 << (x.shape[1] - 1).bit_length()))
    except Signature as s:
        print(json.dumps(repr(s.args[0])))
    else:
        sys.exit("ct.launch did not ask for a compile")
