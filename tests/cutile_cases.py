"""The calls the cuTile GPU tests make (tests/test_gpu_cutile.py), shared with
dev/cutile_bundle.py, which compiles their variants ahead of time into a
bundle where cuTile's compiler runs (the H200 image with driver 580 cannot run tileiras;
the cubins it makes elsewhere run there)."""

from __future__ import annotations

import torch

SHAPES = [((33, 1000), torch.float32), ((64, 1024), torch.float16), ((5, 100), torch.bfloat16),
          ((128, 4096), torch.float32), ((1, 16), torch.float32)]


# benchmarks/frontends.py's shapes (float32): its host-time shape and its GPU-time shape.
BENCHMARK_SHAPES = [(8, 128), (16384, 4096)]


def inputs(device) -> list[torch.Tensor]:
    """One tensor per case; then two row-strided views (rows of stride 40, one 16-byte aligned start and one
    4 bytes off), a transposed one (columns contiguous) and a broadcast row (stride 0: elements overlap)."""
    torch.manual_seed(0)
    xs = [torch.randn(shape, device=device, dtype=dtype) for shape, dtype in SHAPES]
    wide = torch.randn(300, 40, device=device)
    return xs + [wide[:, :25], wide[:, 1:26], wide.t(), torch.randn(1, 100, device=device).expand(6, 100)]
