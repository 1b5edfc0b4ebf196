"""Bundles on the CPU: export with examples traced on CPU tensors
and variants compiled for sm_90 without a GPU, inspect and verify (API and
command line), refusal of corrupt, truncated, other-version and foreign
files, loading into a fresh Python process (registration, schemas, errors),
and the C++ example program built with CMake against the LibTorch of the
torch wheel: it loads the bundle with no libpython in the process and checks
registration and error paths. GPU counterpart: tests/test_gpu_bundle.py."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import struct
import subprocess
import sys

import pytest
import torch

import torch_tile as tt
from torch_tile import _C, _disk_cache, bundle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "cpp")


def _example_ops():
    spec = importlib.util.spec_from_file_location("torch_tile_cpp_example_ops", os.path.join(EXAMPLE, "ops.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ops = _example_ops()
OPS = ops.OPS


@contextlib.contextmanager
def private_disk_cache(directory):
    """Variants compiled for a bundle stay out of the session's disk cache (other tests count compiles)."""
    _disk_cache.configure(str(directory))
    try:
        yield
    finally:
        _disk_cache.configure(None)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bundle") / "ops.ttb")
    with private_disk_cache(tmp_path_factory.mktemp("bundle_cache")):
        summary = tt.export_bundle(OPS, path, examples=ops.examples("cpu"), capabilities=[90])
    return path, summary


def test_export_holds_plans_and_sm90_variants_for_the_examples(exported):
    path, summary = exported
    assert [op["qualname"] for op in summary["ops"]] == OPS
    assert summary["capabilities"] == [90]
    by_name = {op["qualname"]: op for op in summary["ops"]}
    # float32 and float16: one plan each, at least (dtype is a tensor guard).
    assert all(len(op["plans"]) >= 2 for op in summary["ops"])
    softmax = by_name["demo::scaled_softmax"]
    assert softmax["plans"][0]["steps"]["launches"] == ["softmax_kernel", "scale_kernel"]
    assert softmax["kernels"] == {"scale_kernel": [90], "softmax_kernel": [90]}
    # One sm_90 variant per (kernel, key) the example calls make (scale_rows and
    # scaled_softmax share scale_kernel, and may share its keys).
    contents = bundle.read_bundle(path)
    needed = {(kid, tuple(words)) for name, calls in ops.examples("cpu").items() for call in calls
              for kid, words in _C.variant_keys(name, call, {})}
    assert {(v["kernel_id"], tuple(v["key"])) for v in contents["variants"]} == needed
    assert len(contents["variants"]) == len(needed) >= 6
    assert all(v["binary"]["cubin_bytes"] > 1000 for v in contents["variants"])
    assert bundle.verify_bundle(path) == []


def test_variant_keys_follow_dtype_and_alignment():
    a = torch.randn(64, 32)
    f32 = _C.variant_keys("tile::add", (a, a), {})
    f16 = _C.variant_keys("tile::add", (a.half(), a.half()), {})
    assert len(f32) == len(f16) == 1 and f32 != f16
    flat = torch.randn(2049)
    unaligned = _C.variant_keys("tile::add", (flat[1:], flat[1:]), {})
    aligned = _C.variant_keys("tile::add", (flat[:2048], flat[:2048]), {})
    assert unaligned[0][1] != aligned[0][1]  # the pointers' words differ: 4 bytes off is not 16-aligned


def test_inspect_and_verify_from_the_command_line(exported):
    path, _ = exported
    env = {**os.environ, "PYTHONPATH": ROOT}
    shown = subprocess.run([sys.executable, "-m", "torch_tile.bundle", "inspect", path], capture_output=True,
                           text=True, env=env, check=True).stdout
    assert "demo::scaled_softmax(Tensor x, float scale) -> Tensor" in shown
    assert "kernel softmax_kernel: variants for sm_90" in shown and "guard" in shown
    verified = subprocess.run([sys.executable, "-m", "torch_tile.bundle", "verify", path], capture_output=True,
                              text=True, env=env)
    assert verified.returncode == 0 and verified.stdout.strip().endswith("OK")


def _damaged(path, tmp_path, name, change):
    data = bytearray(open(path, "rb").read())
    data = change(data)
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return str(out)


def test_corrupt_truncated_other_version_and_foreign_files_are_refused(exported, tmp_path):
    path, _ = exported

    def flip(d):
        d[len(d) // 2] ^= 0xFF
        return d

    cases = {
        "flipped.ttb": (flip, "bundle are corrupt: checksum mismatch"),
        "truncated.ttb": (lambda d: d[:-100], "truncated"),
        "version.ttb": (lambda d: d[:8] + bytearray(struct.pack("<I", 99)) + d[12:], "bundle of format version 99"),
        # A damaged header: its version field is no version.
        "header.ttb": (lambda d: d[:8] + bytearray(b" und") + d[12:-3],
                       r"bundle are corrupt: truncated or with trailing data \(its header's version field reads "
                       r"1684960544; this torch_tile reads version \d+\)"),
        "foreign.ttb": (lambda d: bytearray(_C.export_plans("tile::add")), "not bundle \\(no TTBUNDLE header\\)"),
    }
    for name, (change, message) in cases.items():
        damaged = _damaged(path, tmp_path, name, change)
        with pytest.raises(ValueError, match=message):
            bundle.read_bundle(damaged)
        with pytest.raises(ValueError, match=message):
            tt.load_bundle(damaged)
        verified = subprocess.run([sys.executable, "-m", "torch_tile.bundle", "verify", damaged],
                                  capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
        assert verified.returncode != 0


def test_a_fresh_process_loads_the_ops_without_defining_them(exported):
    path, _ = exported
    script = f"""
import torch, torch_tile
loaded = torch_tile.load_bundle({path!r})
assert loaded["ops"] == {OPS!r}, loaded
assert loaded["variants"] >= 6 and loaded["plans"] >= 6, loaded
schema = str(torch.ops.demo.scaled_softmax.default._schema)
assert schema == "demo::scaled_softmax(Tensor x, float scale) -> Tensor", schema
try:
    torch.ops.demo.scale_rows(torch.ones(4), 1.0)
except NotImplementedError as e:
    assert "CPU" in str(e), e
else:
    raise AssertionError("a CPU call of a bundle op ran")
# The plans' shapes, evaluated natively: meta tensors and FakeTensor (torch.compile's) take the ops.
from torch._subclasses.fake_tensor import FakeTensorMode
for x in (torch.empty(1000, 37, device="meta"), torch.empty(1000, 37, dtype=torch.float16, device="meta")):
    y = torch.ops.demo.scaled_softmax(x, 2.0)
    assert y.device.type == "meta" and y.shape == x.shape and y.dtype == x.dtype, y
    assert torch.ops.tile.add(x, x).shape == x.shape
with FakeTensorMode():
    fake = torch.empty(1000, 37)
    assert torch.ops.demo.scale_rows(fake, 3.0).shape == (1000, 37)
try:
    torch.ops.demo.scaled_softmax(torch.empty(1000, 37, dtype=torch.float64, device="meta"), 2.0)
except Exception as e:  # a case no exported plan holds: no body here to trace it
    assert "demo::scaled_softmax" in str(e) and "bundle" in str(e), e
else:
    raise AssertionError("a case no bundled plan holds ran on meta tensors")
print("fresh process OK")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr
    assert "fresh process OK" in out.stdout


def test_loading_into_the_defining_process_adds_plans_to_the_same_ops(exported):
    path, _ = exported
    before = ops.scale_rows.plan_count
    loaded = tt.load_bundle(path)
    assert loaded["ops"] == OPS
    assert ops.scale_rows.plan_count > before


def test_cpp_example_builds_loads_the_bundle_without_python_and_checks_errors(exported, cpp_examples):
    path, _ = exported
    program = os.path.join(cpp_examples, "tile_example")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([program, path], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok   no libpython in the process" in out.stdout
    assert "ok   demo::scaled_softmax is registered with a CUDA kernel" in out.stdout
    assert "ok   a call on meta tensors returns the plan's output shape" in out.stdout
    assert "ALL OK" in out.stdout
    linked = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
    assert "libpython" not in linked and "libtorch_python" not in linked


def test_cpp_example_given_a_bundle_it_cannot_load_says_why(exported, cpp_examples, tmp_path):
    program = os.path.join(cpp_examples, "tile_example")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    garbled = tmp_path / "garbled.ttb"
    garbled.write_bytes(b"TTBUNDLE" + b" undamaged text where the header was" * 8)
    for path, message in [(str(tmp_path / "missing.ttb"), "cannot open"),
                          (str(garbled), "bundle are corrupt: truncated or with trailing data")]:
        out = subprocess.run([program, path], capture_output=True, text=True, env=env)
        assert out.returncode == 1, out.stdout + out.stderr  # an error, not an abort
        assert out.stderr.startswith("error: ") and message in out.stderr, out.stderr
