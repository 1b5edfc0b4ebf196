"""Builds the C++ example (main.cpp) with CMake against the installed torch_tile
and the LibTorch of the torch wheel; used by the tests and the benchmark.

    python examples/cpp/build.py BUILD_DIR     # prints the program's path
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch_tile

HERE = os.path.dirname(os.path.abspath(__file__))


def build(build_dir: str, jobs: int = 2) -> str:
    """Configures and builds the example in ``build_dir``; returns the program's path
    (RuntimeError with CMake's output if either step fails)."""
    steps = [["cmake", "-S", HERE, "-B", build_dir, f"-DCMAKE_PREFIX_PATH={torch_tile.cmake_prefix_path}",
              "-DCMAKE_BUILD_TYPE=Release"],
             ["cmake", "--build", build_dir, "-j", str(jobs)]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(step)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return os.path.join(build_dir, "tile_example")


if __name__ == "__main__":
    print(build(sys.argv[1]))
