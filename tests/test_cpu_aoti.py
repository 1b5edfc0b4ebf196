"""AOTInductor packages with tile ops (GPU counterpart: tests/test_gpu_aoti.py): export_bundle takes an exported
program (the tile ops its graph calls), and a LibTorch program with no Python loads a package whose graph calls
tile ops, with their bundle, and its C++ calls them through the dispatcher (here on CPU tensors, which the
dispatcher refuses: tile ops have CUDA kernels only)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import torch

import torch_tile as tt
from torch_tile.kernels import add  # noqa: F401  (defines tile::add)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AOTI_MODEL = os.path.join(ROOT, "examples", "cpp", "aoti_model.py")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


class CallsTileAdd(torch.nn.Module):
    def forward(self, x):
        return torch.ops.tile.add(x.sin(), x)


def test_export_bundle_of_an_exported_program_takes_the_tile_ops_its_graph_calls(tmp_path):
    x = torch.randn(8, 16)
    program = torch.export.export(CallsTileAdd(), (x,))
    summary = tt.export_bundle(program, str(tmp_path / "ops.ttb"), examples={"tile::add": [(x, x)]},
                               capabilities=[90])
    assert [op["qualname"] for op in summary["ops"]] == ["tile::add"]
    plain = torch.export.export(torch.nn.Linear(16, 16), (x,))
    with pytest.raises(ValueError, match="calls no tile op"):
        tt.export_bundle(plain, str(tmp_path / "none.ttb"))


@needs_gxx
@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU package's refusal; on a GPU see test_gpu_aoti.py")
@pytest.mark.skipif(torch.__version__ < "2.12", reason="torch 2.11's AOTInductor logs a custom op's dispatcher error "
                                                       "(shim_common.cpp) and goes on: the program cannot see it")
def test_a_cpp_program_loads_the_package_and_its_cpp_calls_the_tile_op_through_the_dispatcher(
        tile_model_package, cpp_examples):
    out = tile_model_package
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([os.path.join(cpp_examples, "tile_aoti"), f"{out}/model.pt2", f"{out}/ops.ttb",
                           f"{out}/x.pt"], capture_output=True, text=True, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bundle: 2 ops" in done.stdout
    assert "package loaded (device cpu)" in done.stdout
    # The package's first tile op call reached the dispatcher, which has only a CUDA kernel for it.
    assert "error: Could not run 'demo::scaled_softmax' with arguments from the 'CPU' backend" in done.stdout
