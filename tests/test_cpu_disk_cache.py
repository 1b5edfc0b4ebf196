"""CPU tests of the persistent kernel cache: keys, warm loads across
processes, corruption, atomic writes, concurrent writers, eviction, trust,
the CLI. Variants are compiled for sm_90 without a GPU, through the same
callback the C++ runtime calls on a miss."""

import hashlib
import importlib.util
import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import torch_tile as tt
from torch_tile import _disk_cache
from torch_tile import kernels as K
from torch_tile.frontends.triton import compile as triton_compile, kernels as triton_kernels
from torch_tile import _testing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPABILITY = 90


def _words(op, *args):
    plan = op.trace(*args)
    return plan.launches[0].kernel, _testing.specialization_keys(plan, args)[0]


@pytest.fixture
def cache(tmp_path):
    """A fresh cache directory for this test (restored afterwards)."""
    c = _disk_cache.configure(str(tmp_path / "cache"))
    yield c
    _disk_cache.configure(None)


# A worker run in fresh processes: compiles (or loads) tile::add's variant for
# 1000 fp32 elements through the runtime's callback; prints what happened.
WORKER = textwrap.dedent("""
    import json, sys, torch
    import torch_tile as tt
    from torch_tile import _testing, kernels as K
    from torch_tile.frontends.triton import compile as f
    x = torch.randn(int(sys.argv[1]))
    plan = K.add.trace(x, x)
    kid = plan.launches[0].kernel
    words = _testing.specialization_keys(plan, (x, x))[0]
    entry = f._compile_callback(kid, words, 90)
    print(json.dumps({"key": f.variant_cache_key(words, 90), "compiles": tt.compile_count(),
                      "cubin": len(entry["cubin"]), "name": entry["name"]}))
""")


def _worker(cache_dir, n=1000, extra_env=None):
    env = {**os.environ, "TORCH_TILE_CACHE_DIR": str(cache_dir), "PYTHONPATH": ROOT, **(extra_env or {})}
    return subprocess.Popen([sys.executable, "-c", WORKER, str(n)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


# -- keys ------------------------------------------------------------------------------------------


def test_key_is_stable_across_processes(cache):
    kid, words = _words(K.add, torch.randn(1000), torch.randn(1000))
    here = triton_compile.variant_cache_key(words, CAPABILITY)
    there = [_result(_worker(cache.directory)) for _ in range(2)]
    assert there[0]["key"] == there[1]["key"] == here


def _fingerprint_of(directory, source: str, helper: str = "return x", num_warps: int = 4) -> str:
    """Fingerprint of a kernel (with a @triton.jit dependency) written to a module file, as Triton needs."""
    code = textwrap.dedent(f"""
        import triton
        import triton.language as tl

        @triton.jit
        def helper(x):
            {helper}

        @triton.jit
        def kernel(p, n, BLOCK: tl.constexpr):
            {source}
    """)
    path = directory / f"kernel_{hashlib.sha256(code.encode()).hexdigest()[:12]}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = triton_kernels.LaunchConfig(module.kernel, (0, 1, 5), {"BLOCK": 16}, {"num_warps": num_warps})
    return _disk_cache.content_key(triton_kernels.config_fingerprint(config))


def test_key_changes_with_source_dependency_options_and_target(tmp_path):
    body = "tl.store(p + tl.arange(0, BLOCK), helper(n))"
    base = _fingerprint_of(tmp_path, body)
    assert base == _fingerprint_of(tmp_path / "..", body)  # same text elsewhere: same key
    assert base != _fingerprint_of(tmp_path, body.replace("helper(n)", "helper(n) + 1"))  # source
    assert base != _fingerprint_of(tmp_path, body, helper="return x * 2")  # a called @triton.jit function
    assert base != _fingerprint_of(tmp_path, body, num_warps=8)  # launch options
    kid, words = _words(K.add, torch.randn(1000), torch.randn(1000))
    assert triton_compile.variant_cache_key(words, 90) != triton_compile.variant_cache_key(words, 80)  # target
    _, other = _words(K.add, torch.randn(1024), torch.randn(1024))  # n % 16 == 0: another specialization
    assert triton_compile.variant_cache_key(words, 90) != triton_compile.variant_cache_key(other, 90)


# -- warm loads ------------------------------------------------------------------------------------


def test_second_process_loads_without_compiling(cache):
    cold = _result(_worker(cache.directory))
    warm = _result(_worker(cache.directory))
    assert cold["compiles"] == 1 and warm["compiles"] == 0
    assert warm["cubin"] == cold["cubin"] and warm["name"] == cold["name"]
    assert len(_variant_entries(cache)) == 1


def test_other_versions_entries_are_not_loaded(cache, monkeypatch):
    kid, words = _words(K.add, torch.randn(1000), torch.randn(1000))
    triton_compile._compile_callback(kid, words, CAPABILITY)
    before = tt.compile_count()
    monkeypatch.setattr(triton_compile, "__version__", "0.0.0-other")
    triton_compile._compile_callback(kid, words, CAPABILITY)
    assert tt.compile_count() == before + 1  # a new key: the old entry is ignored
    assert len(_variant_entries(cache)) == 2


# -- faults ----------------------------------------------------------------------------------------


def _variant_entries(cache):
    """Paths of the compiled-variant entries (the cache also keeps kernel analyses)."""
    return [path for path, _, _ in cache.entries()
            if b"runtime_params" in open(path, "rb").read()]


def _the_entry(cache):
    (path,) = _variant_entries(cache)
    return path


def test_corrupted_entry_is_reported_once_rebuilt_and_replaced(cache):
    kid, words = _words(K.add, torch.randn(1000), torch.randn(1000))
    good = triton_compile._compile_callback(kid, words, CAPABILITY)
    path = _the_entry(cache)
    key = os.path.basename(path)[: -len(".entry")]
    data = open(path, "rb").read()
    for i, damaged in enumerate((data[: len(data) // 2], data[:-1] + bytes([data[-1] ^ 1]))):  # truncated; a bit
        with open(path, "wb") as f:
            f.write(damaged)
        before = tt.compile_count()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            again = triton_compile._compile_callback(kid, words, CAPABILITY)
        reports = [w for w in seen if "corrupted or truncated" in str(w.message)]
        assert len(reports) == (1 if i == 0 else 0)  # reported once per process
        assert tt.compile_count() == before + 1  # rebuilt, never loaded
        assert again["cubin"] == good["cubin"]
        assert cache.load(key) is not None  # and replaced by a valid entry


def test_failed_write_leaves_nothing(cache, monkeypatch):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    kid, words = _words(K.add, torch.randn(1000), torch.randn(1000))
    with pytest.warns(RuntimeWarning, match="No space left on device"):
        entry = triton_compile._compile_callback(kid, words, CAPABILITY)
    assert entry["cubin"]  # the compile itself is served from memory
    leftovers = [n for _, _, files in os.walk(cache.directory) for n in files if not n.endswith(".lock")]
    assert leftovers == []


def test_missing_directory_that_cannot_be_created_means_memory_only(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.warns(RuntimeWarning, match="memory only"):
        c = _disk_cache.DiskCache(str(blocker / "cache"))
    assert not c.usable
    assert c.get_or_build("k", lambda: ({"v": 1}, b"x")) == ({"v": 1}, b"x")


def test_directory_writable_by_others_is_not_trusted(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    trusted = _disk_cache.DiskCache(str(shared))
    trusted.store("ab" * 32, {"v": 1}, b"cubin")
    os.chmod(shared, 0o777)
    with pytest.warns(RuntimeWarning, match="can be written by other users"):
        c = _disk_cache.DiskCache(str(shared))
    assert not c.usable and c.load("ab" * 32) is None
    monkeypatch.setenv("TORCH_TILE_CACHE_TRUST_SHARED", "1")
    assert _disk_cache.DiskCache(str(shared)).load("ab" * 32) == ({"v": 1}, b"cubin")


# -- many processes ----------------------------------------------------------------------------------


def test_concurrent_processes_compile_once_and_leave_one_entry(cache):
    procs = [_worker(cache.directory, n=4096) for _ in range(8)]
    results = [_result(p) for p in procs]
    assert sum(r["compiles"] for r in results) == 1
    assert len({r["cubin"] for r in results}) == 1
    path = _the_entry(cache)
    assert cache.load(os.path.basename(path)[: -len(".entry")]) is not None
    stray = [n for _, _, files in os.walk(cache.directory) for n in files if n.startswith(".tmp-")]
    assert stray == []


# -- size bound and CLI --------------------------------------------------------------------------------


def test_least_recently_used_entries_are_evicted(tmp_path):
    c = _disk_cache.DiskCache(str(tmp_path / "small"), max_bytes=3 * 1200)  # room for 3 entries of ~1.1 KB
    keys = [f"{i:02d}" * 32 for i in range(5)]
    for i, key in enumerate(keys):
        c.store(key, {"i": i}, b"x" * 1000)
        os.utime(c._path(key), (1000 + i, 1000 + i))  # distinct use times
        if i == 2:
            assert c.load(keys[0]) is not None  # used again: more recent than 1 and 2
            os.utime(c._path(keys[0]), (1002.5, 1002.5))
    assert c.info()["bytes"] <= 3 * 1200
    assert {k for k in keys if os.path.exists(c._path(k))} == {keys[0], keys[3], keys[4]}
    with c.writer_lock(keys[0]):  # a lock file next to an entry goes with it
        pass
    c.max_bytes = 0
    c.evict()
    assert c.entries() == [] and not any(n.endswith(".lock") for _, _, fs in os.walk(c.directory) for n in fs)


def test_cli_info_and_clear(cache):
    kid, words = _words(K.add, torch.randn(1000), torch.randn(1000))
    triton_compile._compile_callback(kid, words, CAPABILITY)
    env = {**os.environ, "TORCH_TILE_CACHE_DIR": cache.directory, "PYTHONPATH": ROOT}
    info = subprocess.run([sys.executable, "-m", "torch_tile.cache", "info", "--json"], env=env,
                          capture_output=True, text=True, check=True)
    details = json.loads(info.stdout)
    entries = len(cache.entries())  # the variant and the kernel's write analysis
    assert details["directory"] == cache.directory and details["entries"] == entries >= 1 and details["bytes"] > 0
    cleared = subprocess.run([sys.executable, "-m", "torch_tile.cache", "clear"], env=env,
                             capture_output=True, text=True, check=True)
    assert f"removed {entries} entries" in cleared.stdout
    assert cache.info()["entries"] == 0
    assert stat.S_IMODE(os.stat(cache.directory).st_mode) == 0o700
