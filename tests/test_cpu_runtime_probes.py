"""CPU tests of runtime pieces no op call reaches without a GPU, through the
probes in torch_tile._C.testing (csrc/testing/runtime_probes.cpp)."""

from torch_tile import _C


def test_inline_cache_stays_bounded_when_a_call_site_alternates_variants():
    # Each miss publishes an entry; before entries were shared per key, 1000
    # alternations between two variants kept 2000 of them alive.
    assert _C.testing.inline_cache_entries(2, 1000) == 2
    assert _C.testing.inline_cache_entries(5, 10) == 5
    assert _C.testing.inline_cache_entries(1, 1) == 1


def test_a_failed_load_unloads_its_module():
    # A fake driver loads the module, then fails the function-attribute query
    # that kernels with > 48 KB of shared memory need: the module must not leak.
    loaded, unloaded, message = _C.testing.failed_load_modules(63)
    assert "cuFuncGetAttribute(SHARED_SIZE_BYTES) failed" in message
    assert loaded == 1 and unloaded == 1
