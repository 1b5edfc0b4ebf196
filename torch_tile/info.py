"""What this torch_tile installation is and can do.

    python -m torch_tile.info          # versions, ABI, GPU, cache directory, frontends
    python -m torch_tile.info --json

Paste its output into a bug report.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import sys
from typing import Optional

import torch
import triton

from . import _C, _extension, cache
from ._version import __version__


def _gpu() -> Optional[dict]:
    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    return {"name": torch.cuda.get_device_name(), "capability": f"sm_{major}{minor}",
            "count": torch.cuda.device_count()}


def _nvrtc() -> str:
    try:
        return f"NVRTC {_C.nvrtc_version()}"
    except Exception as e:  # noqa: BLE001 - reported: the frontend's kernels cannot compile here
        return f"unavailable ({type(e).__name__}: {str(e).splitlines()[0]})"


def _optional(module: str, distribution: str, install: str) -> str:
    """An optional frontend's language package: its version, or how to install it (nothing is imported)."""
    parent = module.split(".")[0]
    if importlib.util.find_spec(parent) is None or importlib.util.find_spec(module) is None:
        return f"not installed ({install})"
    try:
        return f"{distribution} {importlib.metadata.version(distribution)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{module} (version unknown)"


def info() -> dict:
    """The facts ``python -m torch_tile.info`` prints."""
    return {
        "torch_tile": __version__,
        "location": os.path.dirname(os.path.abspath(__file__)),
        "built_with_torch": _extension.built_with(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
        "triton": triton.__version__,
        "python": platform.python_version(),
        "gpu": _gpu(),
        "cache": cache.info(),
        "frontends": {"triton": f"triton {triton.__version__}", "cuda": _nvrtc(),
                      "cutile": _optional("cuda.tile", "cuda-tile", "pip install cuda-tile[tileiras]"),
                      "tilelang": _optional("tilelang", "tilelang", "pip install tilelang==0.1.15")},
    }


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_tile.info", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    args = parser.parse_args(argv)
    facts = info()
    if args.json:
        print(json.dumps(facts))
        return 0
    gpu = facts["gpu"]
    c = facts["cache"]
    lines = [
        ("torch_tile", f"{facts['torch_tile']} ({facts['location']})"),
        ("built with", f"torch {facts['built_with_torch'] or 'unknown (no _built_with.py)'}"),
        ("torch", f"{facts['torch']} (CUDA {facts['torch_cuda']}, C++11 ABI {int(facts['cxx11_abi'])})"),
        ("triton", facts["triton"]),
        ("python", facts["python"]),
        ("GPU", f"{gpu['name']} ({gpu['capability']}, {gpu['count']} device(s))" if gpu
         else "none: ops run on CPU tensors through Triton's interpreter"),
        ("cache", f"{c['directory']} ({c['entries']} entries, {c['bytes'] / 2**20:.1f} of "
                  f"{c['max_bytes'] / 2**20:.0f} MiB){'' if c['usable'] else ', not used'}"),
        *((f"frontend {name}", what) for name, what in facts["frontends"].items()),
    ]
    for key, value in lines:
        print(f"{key:18s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
