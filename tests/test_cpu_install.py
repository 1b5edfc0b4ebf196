"""What an installed torch_tile says about itself: ``python -m torch_tile.info`` and the import's check that the
extension was built for this process's torch."""

import json
import os
import subprocess
import sys

import pytest
import torch
import triton

import torch_tile
import torch_tile.cache
from torch_tile import _extension


def test_info_reports_this_installation_from_any_directory():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(torch_tile.__file__)), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "torch_tile.info", "--json"], cwd=os.path.abspath(os.sep), env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    facts = json.loads(out)
    assert facts["torch_tile"] == torch_tile.__version__
    assert facts["location"] == os.path.dirname(os.path.abspath(torch_tile.__file__))
    assert facts["torch"] == torch.__version__ and facts["triton"] == triton.__version__
    assert facts["built_with_torch"] == _extension.built_with()
    assert facts["gpu"] is None if not torch.cuda.is_available() else facts["gpu"]["count"] >= 1
    assert facts["cache"]["directory"] == torch_tile.cache.info()["directory"]
    assert set(facts["frontends"]) == {"triton", "cuda", "cutile", "tilelang"}
    text = subprocess.run([sys.executable, "-m", "torch_tile.info"], cwd=os.path.abspath(os.sep), env=env,
                          capture_output=True, text=True, timeout=120, check=True).stdout
    assert f"torch_tile         {torch_tile.__version__}" in text and "frontend cuda" in text


def test_the_build_records_the_torch_it_is_for():
    assert _extension.built_with() == torch.__version__


def test_an_extension_built_for_another_torch_is_a_clear_import_error(monkeypatch):
    monkeypatch.setattr(_extension, "built_with", lambda: "2.3.1+cu121")
    with pytest.raises(ImportError, match=rf"built against torch 2\.3\.1\+cu121, this process has torch "
                                          rf"{torch.__version__.replace('+', '[+]')}: rebuild .*--no-build-isolation"):
        _extension.load()
