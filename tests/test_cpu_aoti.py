"""AOTInductor packages (torch_tile/aoti.py; GPU counterpart: tests/test_gpu_aoti.py): the package's library
is linked -Bsymbolic and loads and runs in Python like torch's own; export_bundle takes an exported program
(the tile ops its graph calls); and a LibTorch program with no Python loads a package whose graph calls tile
ops, with their bundle, and its C++ calls them through the dispatcher (on CPU tensors, which the dispatcher
refuses: tile ops have CUDA kernels only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile

import pytest
import torch
import torch._inductor

import torch_tile as tt
import torch_tile.aoti
from torch_tile.kernels import add  # noqa: F401  (defines tile::add)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AOTI_MODEL = os.path.join(ROOT, "examples", "cpp", "aoti_model.py")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def dynamic_flags(library: str) -> str:
    return subprocess.run(["readelf", "-d", library], capture_output=True, text=True, check=True).stdout


def package_library(package: str, into: str) -> str:
    """The package's compiled model library (extracted into ``into``)."""
    with zipfile.ZipFile(package) as archive:
        names = [n for n in archive.namelist() if n.endswith(".so")]
        assert len(names) == 1, names
        return archive.extract(names[0], into)


@needs_gxx
def test_the_compiler_links_shared_objects_bsymbolic_and_leaves_other_runs_alone(tmp_path):
    compiler = torch_tile.aoti.symbolic_linking_compiler()
    assert compiler == torch_tile.aoti.symbolic_linking_compiler()  # one file per compiler
    source = tmp_path / "f.cpp"
    source.write_text("int f(int x) { return x + 1; }\n")
    subprocess.run([compiler, "-shared", "-fPIC", str(source), "-o", str(tmp_path / "f.so")], check=True)
    assert "SYMBOLIC" in dynamic_flags(str(tmp_path / "f.so"))
    subprocess.run([compiler, "-c", "-fPIC", str(source), "-o", str(tmp_path / "f.o")], check=True)
    subprocess.run(["g++", "-shared", "-fPIC", str(tmp_path / "f.o"), "-o", str(tmp_path / "plain.so")], check=True)
    assert "SYMBOLIC" not in dynamic_flags(str(tmp_path / "plain.so"))


@needs_gxx
def test_a_package_is_linked_bsymbolic_and_runs_like_eager_in_python(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU()).eval()
    x = torch.randn(4, 32)
    program = torch.export.export(model, (x,))
    path = torch_tile.aoti.aoti_compile_and_package(program, str(tmp_path / "model.pt2"))
    assert path == str(tmp_path / "model.pt2")
    assert "SYMBOLIC" in dynamic_flags(package_library(path, str(tmp_path / "x")))
    runner = torch._inductor.aoti_load_package(path)
    torch.testing.assert_close(runner(x), model(x))


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
