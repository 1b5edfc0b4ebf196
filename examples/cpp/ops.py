"""Tile ops for the C++ example (examples/cpp/main.cpp), and the bundle export.

    python examples/cpp/ops.py OUT.ttb [--capability 90]

exports ``tile::add`` (one launch), ``demo::scaled_softmax`` (two kernels: a
row softmax, then a scale with an autotuned block size) and
``demo::scale_rows`` (an autotuned kernel), prepared for the example calls in
``examples()`` (float32 and float16; traced on the GPU if there is one, else on
CPU tensors, which stand for CUDA ones) -- the same calls main.cpp makes.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile.kernels import add  # noqa: F401  (defines tile::add)


@triton.jit
def softmax_kernel(out_ptr, x_ptr, stride_x, stride_out, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride_out + cols, (e / tl.sum(e, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8)],
                 key=["n"])
@triton.jit
def scale_kernel(out_ptr, x_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x * scale).to(out_ptr.dtype.element_ty), mask=mask)


@tt.op("demo::scale_rows")
def scale_rows(x: torch.Tensor, scale: float) -> torch.Tensor:
    """x * scale, with an autotuned block size."""
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, x, n, scale)
    return out


@tt.op("demo::scaled_softmax")
def scaled_softmax(x: torch.Tensor, scale: float) -> torch.Tensor:
    """softmax(x, dim=-1) * scale: two kernels."""
    x2 = x.reshape(-1, x.shape[-1])
    probs = torch.empty_like(x2)
    softmax_kernel[(x2.shape[0],)](probs, x2, x2.stride(0), probs.stride(0), x2.shape[1],
                                   BLOCK=triton.next_power_of_2(x2.shape[1]))
    out = torch.empty_like(probs)
    n = out.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](out, probs, n, scale)
    return out.view(x.shape)


# The ops main.cpp calls, as exported.
OPS = ["tile::add", "demo::scale_rows", "demo::scaled_softmax"]


def examples(device="cpu") -> dict:
    """The calls main.cpp makes: per op, argument tuples."""
    x = torch.randn(1024, device=device)  # main.cpp --bench, as benchmarks/launch_overhead.py
    calls = {"tile::add": [(x, x)]}
    for dtype in (torch.float32, torch.float16):
        a = torch.randn(1000, 37, device=device, dtype=dtype)
        calls.setdefault("tile::add", []).append((a, a))
        calls.setdefault("demo::scale_rows", []).append((a, 0.5))
        calls.setdefault("demo::scaled_softmax", []).append((a, 2.0))
    return calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--capability", type=int, action="append", help="GPU architecture, e.g. 90")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    summary = tt.export_bundle(OPS, args.out, examples=examples(device), capabilities=args.capability)
    print(f"{os.path.basename(args.out)}: {len(summary['ops'])} ops, {summary['variants']} variants for "
          f"{summary['capabilities']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
