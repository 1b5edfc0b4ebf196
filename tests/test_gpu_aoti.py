"""AOTInductor on the H200 (CPU counterpart: tests/test_cpu_aoti.py): a model whose graph calls tile ops (a
two-kernel autotuned op and tile::add), packaged by torch._inductor.aoti_compile_and_package, runs with
aoti_load_package in Python and with AOTIModelPackageLoader in a LibTorch program that loaded the ops'
bundle (no libpython in the process), both with the same result as eager.

In Python the system's libstdc++ is preloaded: on some images (an H200 machine's) aoti_load_package of any package
segfaults without it (docs/KNOWN_ISSUES.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch

import test_cpu_aoti as C

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def system_libstdcxx() -> str:
    if shutil.which("g++") is None:
        pytest.skip("needs g++ (to find the system's libstdc++)")
    return os.path.realpath(subprocess.run(["g++", "-print-file-name=libstdc++.so.6"], capture_output=True,
                                           text=True, check=True).stdout.strip())


def test_the_package_runs_like_eager_in_python(tile_model_package):
    env = {**os.environ, "PYTHONPATH": C.ROOT, "PYTHONFAULTHANDLER": "1", "LD_PRELOAD": system_libstdcxx()}
    done = subprocess.run([sys.executable, C.AOTI_MODEL, tile_model_package, "--load"], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "aoti_load_package: same as eager" in done.stdout


def test_the_package_runs_like_eager_in_a_cpp_program_with_no_python(tile_model_package, cpp_examples):
    out = tile_model_package
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([os.path.join(cpp_examples, "tile_aoti"), f"{out}/model.pt2", f"{out}/ops.ttb",
                           f"{out}/x.pt", f"{out}/y.pt"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "package loaded (device cuda)" in done.stdout
    assert "libpython mapped: no" in done.stdout
    assert "same as eager" in done.stdout
