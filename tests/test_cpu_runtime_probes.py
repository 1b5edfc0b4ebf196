"""CPU tests of runtime pieces no op call reaches without a GPU, through the
probes in _testing (csrc/testing/runtime_probes.cpp), and of the
benchmark loops there that run on CPU tensors (csrc/testing/benchmarks.cpp)."""

import pytest
import torch

from torch_tile import _testing


def test_a_failed_load_unloads_its_module():
    # A fake driver loads the module, then fails the function-attribute query
    # that kernels with > 48 KB of shared memory need: the module must not leak.
    loaded, unloaded, message = _testing.failed_load_modules(63)
    assert "cuFuncGetAttribute(SHARED_SIZE_BYTES) failed" in message
    assert loaded == 1 and unloaded == 1


def test_declared_parameter_widths_are_checked_against_the_kernel_at_load():
    # Device ordinals no real test uses (device properties are cached per ordinal).
    assert _testing.param_check_message([8, 4, 8], [8, 4, 8], 62) == ""
    assert _testing.param_check_message([8, 4, 8, 8, 8], [8, 4, 8], 61) == ""  # Triton's two scratch pointers
    message = _testing.param_check_message([8, 8], [8, 4], 60)
    assert message == "kernel probe: parameter 1 is declared 8 bytes wide, but the launch passes 4 bytes there"
    message = _testing.param_check_message([8, 4, 4], [8, 4], 59)
    assert message == "kernel probe declares 3 parameters, but the launch passes 2"


def test_dispatcher_chain_feeds_each_output_to_the_next_call():
    # benchmarks/real_wrappers.py times aten::_to_copy + a tile op this way on the GPU; any ops run on CPU
    # tensors. Overloads, kwargs and `...` (the previous output, positional or keyword) all reach the
    # dispatcher: the last step accumulates into acc once per run, the untimed first run included.
    x, y, w = torch.randn(8), torch.randn(8), torch.randn(8)
    acc = torch.zeros(8)
    steps = [("aten::add", "Tensor", (x, y), {"alpha": 2}),
             ("aten::mul", "Tensor", (w,), {"other": ...}),
             ("aten::add_", "Tensor", (acc, ...), {})]
    assert _testing.bench_dispatcher_chain(steps, 3) > 0
    torch.testing.assert_close(acc, 4 * ((x + 2 * y) * w))


def test_dispatcher_chain_refuses_bad_steps():
    x = torch.randn(4)
    chain = _testing.bench_dispatcher_chain
    with pytest.raises(ValueError, match="no steps"):
        chain([], 1)
    with pytest.raises(ValueError, match=r"step 0 \(aten::add\.Nope\): no such operator overload"):
        chain([("aten::add", "Nope", (x, x), {})], 1)
    with pytest.raises(ValueError, match="previous output.*first step"):
        chain([("aten::neg", "", (...,), {})], 1)
    with pytest.raises(ValueError, match="previous step returned 2 values, not one"):
        chain([("aten::max", "dim", (x, 0), {}), ("aten::neg", "", (...,), {})], 1)
    with pytest.raises(TypeError, match=r"step 1 \(aten::neg\)"):
        chain([("aten::neg", "", (x,), {}), ("aten::neg", "", (..., x), {})], 1)
    with pytest.raises(TypeError):  # a step is (qualname, overload, args, kwargs)
        chain([("aten::neg", (x,))], 1)
