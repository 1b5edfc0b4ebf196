"""CPU tests: the disk cache never loads what it did not write for the key.

One cache-fault test per fault: an entry copied to another variant's name; a
symbolic link (subdirectory or entry) leading out of the private directory, a
subdirectory others can write to, an entry that is not a regular file; launch
metadata that does not fit its cubin (num_warps, name, shared memory, parameter
types, num_ctas) or is malformed; an entry of the previous format. Then the
size bound: ``TORCH_TILE_CACHE_MAX_BYTES`` with suffixes, and writes that do not
scan the directory until the bound is passed. Variants are real Triton cubins
compiled for sm_90 without a GPU, through the callback the C++ runtime calls.
"""

import hashlib
import json
import os
import random
import shutil
import stat
import struct
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import torch

import torch_tile as tt
from torch_tile import _cubin, _disk_cache
from torch_tile import kernels as K
from torch_tile.frontends.triton import compile as triton_compile

import launch_kernel_ops as L
import test_cpu_disk_cache as base
import tma_ops as T

CAPABILITY = 90
cache = base.cache  # a fresh cache directory per test


def _variant(op, *args):
    """(kernel id, key words, disk-cache key) of the first launch of op(*args)."""
    kid, words = base._words(op, *args)
    return kid, words, triton_compile.variant_cache_key(words, CAPABILITY)


def _compile(kid, words):
    """The callback's result and whether it compiled (True) or loaded (False), with the warnings it gave."""
    before = tt.compile_count()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        entry = triton_compile._compile_callback(kid, words, CAPABILITY)
    return entry, tt.compile_count() > before, [str(w.message) for w in seen]


def _recorded_key(path) -> str:
    """The key an entry file says it was written for."""
    body = open(path, "rb").read().partition(b"\n")[2]
    return json.loads(body.partition(b"\n")[0])["key"]


# -- 1. an entry records its key ------------------------------------------------------------------------


@pytest.mark.parametrize("other_args", [
    pytest.param(lambda: (torch.randn(1024), torch.randn(1024)), id="another-specialization"),  # n % 16 == 0
    pytest.param(lambda: (torch.randn(1001)[1:], torch.randn(1001)[1:]), id="unaligned-pointers"),
])
def test_entry_copied_to_another_variants_name_is_rebuilt(cache, other_args):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    other_kid, other_words, other_key = _variant(K.add, *other_args())
    assert other_key != key
    _compile(kid, words)
    _compile(other_kid, other_words)
    good = open(cache._path(other_key), "rb").read()
    shutil.copyfile(cache._path(key), cache._path(other_key))  # valid checksum, wrong variant

    entry, compiled, messages = _compile(other_kid, other_words)
    assert compiled and any("holds the entry of another key" in m for m in messages)
    assert open(cache._path(other_key), "rb").read() == good  # rebuilt and replaced
    assert _recorded_key(cache._path(other_key)) == other_key
    assert _compile(other_kid, other_words)[1] is False  # and loaded from now on


# -- 2. no links, no files of others -----------------------------------------------------------------------


def _world_writable(tmp_path):
    shared = tmp_path / "world_writable"
    shared.mkdir()
    os.chmod(shared, 0o777)
    return shared


def _listing(directory):
    return sorted((p, os.lstat(os.path.join(p, n)).st_mtime_ns, os.lstat(os.path.join(p, n)).st_size)
                  for p, _, names in os.walk(directory) for n in names)


def test_symlinked_subdirectory_is_neither_read_nor_written(cache, tmp_path):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    _compile(kid, words)
    shared = _world_writable(tmp_path)
    subdirectory = os.path.dirname(cache._path(key))
    shutil.copytree(subdirectory, shared, dirs_exist_ok=True)  # a valid entry, planted where anyone can edit it
    shutil.rmtree(subdirectory)
    os.symlink(shared, subdirectory)
    planted = _listing(shared)

    entry, compiled, messages = _compile(kid, words)
    assert compiled and entry["cubin"]
    assert any("is a symbolic link" in m and "not used" in m for m in messages)
    assert _listing(shared) == planted  # no entry, lock or temporary file written through the link
    cache.clear()
    cache.max_bytes = 0
    cache.evict()
    assert _listing(shared) == planted  # nor deleted through it


def test_symlinked_entry_is_not_followed(cache, tmp_path):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    _compile(kid, words)
    shared = _world_writable(tmp_path)
    target = shared / "entry"
    path = cache._path(key)
    shutil.move(path, target)
    os.symlink(target, path)
    planted = target.read_bytes()

    entry, compiled, messages = _compile(kid, words)
    assert compiled and any("is a symbolic link" in m for m in messages)
    assert target.read_bytes() == planted  # not written through the link...
    assert not os.path.islink(path) and _recorded_key(path) == key  # ...which the rebuilt entry replaced


def _make_writable_by_others(path):
    os.chmod(path, 0o777)


def _give_to_another_user(path):
    os.chown(path, 12345, 12345)


@pytest.mark.parametrize("where, fault, reason", [
    ("subdirectory", _make_writable_by_others, "can be written by other users"),
    ("entry", _make_writable_by_others, "can be written by other users"),
    pytest.param("entry", _give_to_another_user, "is owned by user 12345",
                 marks=pytest.mark.skipif(os.getuid() != 0, reason="chown needs root")),
])
def test_files_others_can_write_are_not_used(cache, where, fault, reason):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    _compile(kid, words)
    path = cache._path(key)
    fault(os.path.dirname(path) if where == "subdirectory" else path)
    planted = os.stat(path).st_ino
    entry, compiled, messages = _compile(kid, words)
    assert compiled and any(reason in m and "not used" in m for m in messages), messages
    # A refused subdirectory is not written to either; a refused entry is replaced by the rebuilt one.
    assert (os.stat(path).st_ino == planted) == (where == "subdirectory")


def test_entry_that_is_not_a_regular_file_is_not_opened_for_reading(cache):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    _compile(kid, words)
    path = cache._path(key)
    os.unlink(path)
    os.mkfifo(path)  # reading it would block forever
    entry, compiled, messages = _compile(kid, words)
    assert compiled and any("is not a regular file" in m for m in messages)
    assert stat.S_ISREG(os.lstat(path).st_mode)  # replaced by the rebuilt entry


def test_entry_that_is_a_directory_is_not_used_and_the_variant_compiled(cache):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    _compile(kid, words)
    path = cache._path(key)
    os.unlink(path)
    os.mkdir(path)
    entry, compiled, messages = _compile(kid, words)
    assert compiled and any("is not a regular file" in m for m in messages), messages
    assert entry["cubin"]
    cache.max_bytes = 0
    cache.evict()  # the directory is not an entry: neither counted nor removed
    assert cache.info()["entries"] == 0 and os.path.isdir(path)
    cache.clear()


def test_trusted_shared_directory_still_follows_no_link(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_TILE_CACHE_TRUST_SHARED", "1")
    c = _disk_cache.DiskCache(str(_world_writable(tmp_path)))
    key = "ab" * 32
    c.store(key, {"v": 1}, b"blob")
    assert c.load(key) == ({"v": 1}, b"blob")  # others' permissions are trusted...
    elsewhere = tmp_path / "elsewhere.entry"
    shutil.move(c._path(key), elsewhere)
    os.symlink(elsewhere, c._path(key))
    with pytest.warns(RuntimeWarning, match="is a symbolic link"):
        assert c.load(key) is None  # ...links are not


# -- 3. launch metadata that does not fit its cubin ----------------------------------------------------


@pytest.fixture(scope="module")
def real_entries():
    """Variants as the compile path writes them (metadata, cubin, bindings), compiled by Triton for sm_90."""
    cases = {
        "add": (K.add, torch.randn(1000), torch.randn(1000)),
        "softmax-8-warps": (K.softmax, torch.randn(2, 3000)),
        "cluster-2-ctas": (L.affine_cluster, torch.randn(5000)),
        "tma-descriptors": (T.scale, torch.randn(64, 64), 2.0),
    }
    entries = {}
    for name, (op, *args) in cases.items():
        kid, words = base._words(op, *args)
        meta, cubin = triton_compile._compiled_entry(kid, words, CAPABILITY)
        entries[name] = (meta, cubin, len(words) - 1)
    return entries


def test_what_real_triton_cubins_say(real_entries):
    """The attributes the checks rely on, as Triton's sm_90 cubins carry them."""
    for meta, cubin, _ in real_entries.values():
        info = _cubin.kernel_info(cubin, meta["name"])
        assert info.has_symbol and info.required_threads == (32 * meta["num_warps"], 1, 1)
        assert len(info.param_sizes) == len(meta["runtime_param_types"]) + 2  # + Triton's scratch pointers
        assert info.cluster == (None if meta["num_ctas"] == 1 else (meta["num_ctas"], 1, 1))
        assert info.static_shared == 0  # Triton's shared memory is all dynamic
    tma = real_entries["tma-descriptors"][0]
    assert _cubin.kernel_info(real_entries["tma-descriptors"][1], tma["name"]).param_sizes[:5] == [128, 4, 4, 8, 8]
    assert real_entries["softmax-8-warps"][0]["num_warps"] == 8 and real_entries["cluster-2-ctas"][0]["num_ctas"] == 2


def test_correct_entries_pass(real_entries):
    for meta, cubin, bindings in real_entries.values():
        assert _cubin.launch_metadata_problem(meta, cubin, bindings) is None


# (case, field, wrong value, words of the reason)
WRONG_FIELDS = [
    ("add", "num_warps", 8, "blocks of (128, 1, 1) threads"),
    ("softmax-8-warps", "num_warps", 4, "blocks of (256, 1, 1) threads"),
    ("add", "name", "another_kernel", "no kernel 'another_kernel'"),
    ("add", "shared", _cubin.MAX_SHARED_BYTES + 1, "'shared'"),
    ("add", "runtime_param_types", ["*fp32", "*fp32", "*fp32", "i64"], "take parameters of"),
    ("add", "runtime_param_types", ["*fp32", "*fp32", "i32"], "differ in length"),
    ("tma-descriptors", "runtime_param_types", (["nvTmaDesc"] + ["i32"] * 4) * 2 + ["fp32"],  # strides: i64
     "take parameters of"),
    ("add", "num_ctas", 2, "clusters of (1, 1, 1)"),
    ("cluster-2-ctas", "num_ctas", 1, "clusters of (2, 1, 1)"),
]


@pytest.mark.parametrize("case, field, value, reason", WRONG_FIELDS,
                         ids=[f"{c}-{f}-{v}"[:40] for c, f, v, _ in WRONG_FIELDS])
def test_wrong_metadata_field_is_caught(real_entries, case, field, value, reason):
    meta, cubin, bindings = real_entries[case]
    problem = _cubin.launch_metadata_problem({**meta, field: value}, cubin, bindings)
    assert problem is not None and reason in problem, problem


def _with_section_size(cubin: bytes, section: str, size: int) -> bytes:
    """The cubin with one section header's size changed (a kernel with static shared memory)."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", cubin, 0x3C)
    names_at = struct.unpack_from("<Q", cubin, shoff + shstrndx * 64 + 24)[0]
    for i in range(shnum):
        header = shoff + i * 64
        name_at = names_at + struct.unpack_from("<I", cubin, header)[0]
        if cubin[name_at:cubin.index(b"\0", name_at)].decode() == section:
            return cubin[:header + 32] + struct.pack("<Q", size) + cubin[header + 40:]
    raise AssertionError(f"no section {section}")


def test_static_plus_dynamic_shared_memory_is_bounded(real_entries):
    meta, cubin, bindings = real_entries["tma-descriptors"]
    section = f".nv.shared.{meta['name']}"
    assert _cubin.kernel_info(cubin, meta["name"]).shared_section == _cubin.RESERVED_SHARED_BYTES
    big_static = _with_section_size(cubin, section, _cubin.RESERVED_SHARED_BYTES + 8192)
    assert _cubin.kernel_info(big_static, meta["name"]).static_shared == 8192
    fits = {**meta, "shared": _cubin.MAX_SHARED_BYTES - 8192}
    assert _cubin.launch_metadata_problem(fits, big_static, bindings) is None
    problem = _cubin.launch_metadata_problem({**fits, "shared": fits["shared"] + 1}, big_static, bindings)
    assert "8192 bytes of static" in problem


MALFORMED = [
    ("num_warps", "4"), ("num_warps", True), ("num_warps", 4.0), ("num_ctas", 0), ("shared", -1),
    ("launch_pdl", 1), ("global_scratch_align", 3), ("name", None), ("runtime_params", "0123"),
    ("runtime_params", [0, 1, 2, 99]), ("runtime_param_types", ["*fp32", "*fp32", "*fp32", 32]),
    ("runtime_param_types", ["*fp32", "*fp32", "*fp32", "fp16"]), ("runtime_param_parts", [-1, -1, -1, 300]),
    ("tensor_maps", [{"block_size": [32, 32], "elem_type": 7, "elem_size": 4, "swizzle": 3}]),
    ("tensor_maps", None),
]


@pytest.mark.parametrize("field, value", MALFORMED, ids=[f"{f}={v!r}"[:40] for f, v in MALFORMED])
def test_malformed_metadata_is_caught(real_entries, field, value):
    meta, cubin, bindings = real_entries["add"]
    assert _cubin.launch_metadata_problem({**meta, field: value}, cubin, bindings) is not None


def test_malformed_tensor_map_is_caught(real_entries):
    meta, cubin, bindings = real_entries["tma-descriptors"]
    for bad in ({**meta["tensor_maps"][0], "block_size": [32, 0]}, {**meta["tensor_maps"][0], "swizzle": "128B"}):
        problem = _cubin.launch_metadata_problem({**meta, "tensor_maps": [bad, meta["tensor_maps"][1]]}, cubin,
                                                 bindings)
        assert "tensor map" in problem


@pytest.mark.parametrize("damage", ["truncated", "not-elf", "other-machine"])
def test_unreadable_cubin_is_caught(real_entries, damage):
    meta, cubin, bindings = real_entries["add"]
    bad = {"truncated": cubin[:200], "not-elf": b"\0" * len(cubin),
           "other-machine": cubin[:18] + struct.pack("<H", 62) + cubin[20:]}[damage]
    assert "cannot be read" in _cubin.launch_metadata_problem(meta, bad, bindings)


def test_damaged_cubins_give_a_reason_never_an_exception(real_entries):
    """Random byte damage (mostly in the headers) anywhere: the check answers, it does not crash."""
    meta, cubin, bindings = real_entries["add"]
    rng = random.Random(0)
    for _ in range(500):
        damaged = bytearray(cubin)
        for _ in range(rng.randint(1, 8)):
            where = rng.randrange(2048) if rng.random() < 0.7 else rng.randrange(len(cubin))
            damaged[where] = rng.randrange(256)
        if rng.random() < 0.1:
            damaged = damaged[:rng.randrange(len(cubin))]
        problem = _cubin.launch_metadata_problem(meta, bytes(damaged), bindings)
        assert problem is None or isinstance(problem, str)


@pytest.mark.parametrize("field, value", [("num_warps", 8), ("name", "another_kernel"),
                                          ("runtime_param_types", ["*fp32", "*fp32", "*fp32", "i64"]),
                                          ("num_ctas", 2), ("shared", _cubin.MAX_SHARED_BYTES + 1),
                                          ("runtime_params", [0, 1, 2, 99])])
def test_entry_with_wrong_metadata_is_rebuilt_not_returned(cache, field, value):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    good, _, _ = _compile(kid, words)
    meta, cubin = cache.load(key)
    cache.store(key, {**meta, field: value}, cubin)  # checksummed, right key, wrong for its cubin

    entry, compiled, messages = _compile(kid, words)
    assert compiled and any("cannot be used" in m and "rebuilt" in m for m in messages), messages
    assert entry == good
    assert cache.load(key) == (meta, cubin)  # replaced by the rebuilt entry


def test_get_or_build_validate_contract(tmp_path):
    """validate(meta, blob) returns a reason or raises: either way the entry is rebuilt, never returned."""
    c = _disk_cache.DiskCache(str(tmp_path / "c"))
    c.store("ab" * 32, {"v": "stale"}, b"x")

    def reject(meta, blob):
        return "stale" if meta["v"] == "stale" else None

    def crash(meta, blob):
        raise KeyError("v2")

    built = ({"v": "fresh"}, b"y")
    with pytest.warns(RuntimeWarning, match=r"cannot be used \(stale\); it is rebuilt"):
        assert c.get_or_build("ab" * 32, lambda: built, validate=reject) == built
    assert c.get_or_build("ab" * 32, lambda: pytest.fail("rebuilt a valid entry"), validate=reject) == built
    with pytest.warns(RuntimeWarning, match="KeyError"):
        assert c.get_or_build("ab" * 32, lambda: built, validate=crash) == built


# -- the format change ----------------------------------------------------------------------------------


def test_entry_of_the_previous_format_is_a_silent_miss(cache):
    kid, words, key = _variant(K.add, torch.randn(1000), torch.randn(1000))
    good, _, _ = _compile(kid, words)
    meta, cubin = cache.load(key)
    body = json.dumps({**meta, "blob_size": len(cubin)}, sort_keys=True).encode() + b"\n" + cubin
    with open(cache._path(key), "wb") as f:  # as torch_tile-cache-1 wrote it: no key
        f.write(b"torch_tile-cache-1 " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)

    entry, compiled, messages = _compile(kid, words)
    assert compiled and entry == good and messages == []  # rebuilt, no error reported
    assert open(cache._path(key), "rb").read().startswith(_disk_cache.FORMAT + b" ")


# -- 4. the size bound's variable -------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("1000", 1000), ("0", 0), ("2GiB", 2 << 30), ("2gib", 2 << 30), ("512 MiB", 512 << 20), ("1.5KiB", 1536),
    ("3TiB", 3 << 40), ("2G", 2 * 10**9), ("2GB", 2 * 10**9), ("500M", 500 * 10**6), ("64k", 64000),
    ("1T", 10**12), (" 7B ", 7),
])
def test_max_bytes_accepts_integers_and_suffixes(monkeypatch, tmp_path, text, expected):
    monkeypatch.setenv("TORCH_TILE_CACHE_MAX_BYTES", text)
    assert _disk_cache.DiskCache(str(tmp_path / "c")).max_bytes == expected


@pytest.mark.parametrize("text", ["2 GiBs", "lots", "-1", "", "1e9", "2iB", "0x10"])
def test_bad_max_bytes_names_the_variable_and_value(monkeypatch, tmp_path, text):
    monkeypatch.setenv("TORCH_TILE_CACHE_MAX_BYTES", text)
    with pytest.raises(ValueError, match=f"TORCH_TILE_CACHE_MAX_BYTES={text!r}"):
        _disk_cache.DiskCache(str(tmp_path / "c"))


# -- 5. writes do not scan the directory until the bound ---------------------------------------------


@pytest.fixture
def scans(monkeypatch):
    """Counts directory scans (os.scandir calls) from now on."""
    calls = []
    real = os.scandir

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(os, "scandir", counting)
    return calls


ENTRY = b"x" * 1000


def _entry_bytes(c):
    c.store("ff" * 32, {"i": -1}, ENTRY)
    size = os.path.getsize(c._path("ff" * 32))
    os.unlink(c._path("ff" * 32))
    return size


def test_writes_below_the_bound_do_not_scan_and_eviction_happens_at_it(tmp_path, scans):
    probe = _disk_cache.DiskCache(str(tmp_path / "probe"))
    size = _entry_bytes(probe)
    c = _disk_cache.DiskCache(str(tmp_path / "c"), max_bytes=3 * size)
    keys = [f"{i:02d}" * 32 for i in range(5)]
    c.store(keys[0], {"i": 0}, ENTRY)  # the first write scans once: the estimate starts from the directory
    scans.clear()
    for i in (1, 2):
        c.store(keys[i], {"i": i}, ENTRY)
    assert scans == []  # 3 entries: at the bound, not past it
    for i, key in enumerate(keys[:3]):
        os.utime(c._path(key), (1000 + i, 1000 + i))  # distinct use times: keys[0] is least recent
    c.store(keys[3], {"i": 3}, ENTRY)
    assert scans  # past the bound: scanned and evicted
    assert {k for k in keys if os.path.exists(c._path(k))} == {keys[1], keys[2], keys[3]}
    assert c.info()["bytes"] <= c.max_bytes


def test_first_write_counts_what_other_processes_wrote(tmp_path):
    directory = str(tmp_path / "c")
    first = _disk_cache.DiskCache(directory)
    size = _entry_bytes(first)
    for i in range(3):
        first.store(f"{i:02d}" * 32, {"i": i}, ENTRY)
    second = _disk_cache.DiskCache(directory, max_bytes=3 * size)  # another process, same directory
    second.store("99" * 32, {"i": 99}, ENTRY)
    assert len(second.entries()) == 3 and second.info()["bytes"] <= 3 * size


def test_entries_dated_in_the_future_do_not_get_new_entries_evicted(tmp_path):
    # Clock skew or a copied cache: entries whose use time is in the future.
    probe = _disk_cache.DiskCache(str(tmp_path / "probe"))
    size = _entry_bytes(probe)
    directory = str(tmp_path / "c")
    c = _disk_cache.DiskCache(directory, max_bytes=3 * size)
    keys = [f"{i:02d}" * 32 for i in range(6)]
    future = time.time() + 86400
    for i in range(3):
        c.store(keys[i], {"i": i}, ENTRY)
        os.utime(c._path(keys[i]), (future + i, future + i))
    c.store(keys[3], {"i": 3}, ENTRY)  # compiled now: kept, a future-dated entry goes
    assert c.load(keys[3]) == ({"i": 3}, ENTRY) and len(c.entries()) == 3
    for i in (4, 5):  # later processes use it, then compile their own: it stays, and so do theirs
        later = _disk_cache.DiskCache(directory, max_bytes=3 * size)
        assert later.load(keys[3]) == ({"i": 3}, ENTRY)
        later.store(keys[i], {"i": i}, ENTRY)
        assert later.load(keys[i]) == ({"i": i}, ENTRY) and len(later.entries()) == 3
    assert {k for k in keys if os.path.exists(c._path(k))} == {keys[3], keys[4], keys[5]}


def test_the_entry_just_written_is_never_evicted(tmp_path):
    probe = _disk_cache.DiskCache(str(tmp_path / "probe"))
    size = _entry_bytes(probe)
    c = _disk_cache.DiskCache(str(tmp_path / "c"), max_bytes=size // 2)  # smaller than one entry
    c.store("aa" * 32, {"i": 0}, ENTRY)
    assert c.load("aa" * 32) == ({"i": 0}, ENTRY)
    c.store("bb" * 32, {"i": 1}, ENTRY)  # the older one goes, the new one stays
    assert c.load("bb" * 32) == ({"i": 1}, ENTRY) and c.load("aa" * 32) is None


# -- 6. the default directory --------------------------------------------------------------------------

# Run with no HOME and no passwd entry for the uid (pwd refuses it, as in containers run as an
# unnamed uid): where the cache goes, what torch's own cache would use, and the warnings.
NO_HOME = textwrap.dedent("""
    import json, os, pwd, warnings

    def no_entry(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    pwd.getpwuid = no_entry
    assert os.path.expanduser("~") == "~"
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    from torch_tile import _disk_cache
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first, second = _disk_cache.DiskCache(), _disk_cache.DiskCache()
    try:
        torch_dir = default_cache_dir()
    except KeyError:  # torch 2.11's asks getpass.getuser(), which raises without a passwd entry
        torch_dir = None
    print(json.dumps({"directory": first.directory, "again": second.directory, "usable": first.usable,
                      "torch": torch_dir, "warnings": [str(w.message) for w in seen],
                      "mode": os.stat(first.directory).st_mode & 0o777}))
""")


def test_without_a_home_directory_the_cache_is_private_and_in_the_temporary_directory(tmp_path):
    work, temporary = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    temporary.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOME", "TORCH_TILE_CACHE_DIR", "USER", "LOGNAME", "LNAME", "USERNAME")}
    env.update({"TMPDIR": str(temporary), "PYTHONPATH": base.ROOT, "TORCH_TILE_TEST_SUBPROCESS": "1"})
    done = subprocess.run([sys.executable, "-c", NO_HOME], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # torch's caches go to <tmp>/torchinductor_<user> (where its version names a user without a passwd entry);
    # torch_tile's beside them.
    assert report["directory"] == report["again"] == os.path.join(str(temporary), f"torch_tile_uid_{os.getuid()}")
    assert report["torch"] in (None, report["directory"].replace("torch_tile_", "torchinductor_"))
    assert report["usable"] and report["mode"] == 0o700
    assert os.listdir(work) == []  # no "~" directory in the working directory
    said = [w for w in report["warnings"] if "home directory" in w]
    assert len(said) == 1 and report["directory"] in said[0] and "TORCH_TILE_CACHE_DIR" in said[0], report
