"""GPU tests: bad calls on the CUDA path (the C++ kernel) get a clear exception
naming op and argument, never a silently wrong result, and the process keeps
working. CPU counterparts: tests/test_cpu_hardening.py."""

import pytest
import torch

from torch_tile import kernels  # noqa: F401  (registers tile::add, tile::add_)

from conftest import requires_cuda
from hardening_ops import alloc, check_allocation_rank_past_the_limit, copy_into, decayed, flag_copy, raw_add

pytestmark = requires_cuda


def test_partial_overlap_in_place_is_refused():
    a = torch.arange(2048.0, device="cuda")
    before = a.clone()
    with pytest.raises(ValueError, match=r"tile::add_: argument 'x' is written and partially overlaps argument 'y'"):
        torch.ops.tile.add_(a[1:], a[:-1])
    torch.cuda.synchronize()
    assert torch.equal(a, before)
    torch.ops.tile.add_(a, a)  # full overlap, as a.add_(a): allowed
    torch.testing.assert_close(a, before * 2, rtol=0, atol=0)


def test_partial_overlap_is_refused_in_inference_mode():
    a = torch.arange(256.0, device="cuda")
    with torch.inference_mode():
        b = torch.arange(256.0, device="cuda")
        with pytest.raises(ValueError, match="partially overlaps"):
            torch.ops.tile.add_(b[1:], b[:-1])
    with pytest.raises(ValueError, match="partially overlaps"):
        torch.ops.tile.add_(a[1:], a[:-1])


def test_expanded_written_argument_is_refused():
    with pytest.raises(ValueError, match=r"argument 'out' is written, but several of its elements share"):
        copy_into(torch.zeros(1, device="cuda").expand(64), torch.randn(64, device="cuda"))


@pytest.mark.parametrize("other", ["meta", "cpu"])
@pytest.mark.parametrize("cuda_first", [True, False])
def test_cuda_mixed_with_another_device_is_refused(other, cuda_first):
    x = torch.randn(16, device="cuda")
    o = torch.empty(16, device=other) if other == "meta" else torch.randn(16)
    args = (x, o) if cuda_first else (o, x)
    with pytest.raises((ValueError, RuntimeError), match=r"tile::add: argument '[xy]' expected a"):
        torch.ops.tile.add(*args)


def test_none_and_wrong_kinds_name_op_and_argument():
    x = torch.randn(16, device="cuda")
    with pytest.raises(TypeError, match=r"tile::add: argument 'y' expected a Tensor, got None"):
        torch.ops.tile.add(x, None)
    with pytest.raises(TypeError, match=r"hardening::flag_copy: argument 'flag' expected a bool, got None"):
        flag_copy(x, 16, None)
    z = torch.empty_like(x, dtype=torch.float8_e8m0fnu)
    with pytest.raises(TypeError, match=r"tile::add: argument 'x' expected a dtype a launch plan can hold"):
        torch.ops.tile.add(z, z)
    torch.testing.assert_close(flag_copy(x, 16, True), x)
    assert torch.count_nonzero(flag_copy(x, 16, False)) == 0


def test_tensor_subclass_on_cuda():
    class Tagged(torch.Tensor):
        pass

    x, y = torch.randn(300, device="cuda"), torch.randn(300, device="cuda")
    out = torch.ops.tile.add(x.as_subclass(Tagged), y.as_subclass(Tagged))
    torch.testing.assert_close(out.as_subclass(torch.Tensor), x + y, rtol=0, atol=0)


def test_allocation_limits_name_the_op_on_the_native_path():
    x = torch.randn(2, device="cuda")
    assert alloc(x, 2, 3).shape == (3, 3)  # traces the rank-2 plan; sizes stay symbolic
    # Same plan, a size whose byte count leaves int64: refused by the C++ allocation step.
    with pytest.raises(ValueError, match=r"hardening::alloc: allocation 0 of shape \[1099511627776, "
                                         r"1099511627776\] would need more than 2\^63 bytes"):
        alloc(x, 2, 2**40)
    check_allocation_rank_past_the_limit(x)
    assert alloc(x, 2, 4).shape == (4, 4)


def test_compile_failure_names_op_kernel_and_site():
    x = torch.randn(64, device="cuda").to(torch.float8_e4m3fn)
    try:
        out = raw_add(x, x)
    except RuntimeError as e:  # Triton cannot add fp8 on this target: the error says where
        assert "hardening::raw_add: kernel raw_add_kernel (launched at" in str(e)
        assert "compiling raw_add_kernel failed" in str(e)
    else:  # a Triton that can: then the result must be right
        torch.testing.assert_close(out.float(), (x.float() + x.float()).to(torch.float8_e4m3fn).float())
    y = torch.randn(64, device="cuda")
    torch.testing.assert_close(raw_add(y, y), y + y)  # the process keeps working


def test_calls_past_the_most_plans_an_op_keeps_run_the_body():
    x = torch.randn(1000, device="cuda")
    with pytest.warns(RuntimeWarning, match="the op keeps 256 launch plans, the most one op keeps"):
        for step in range(300):  # a plan per step, up to 256; then the body for the steps no plan serves
            torch.testing.assert_close(decayed(x, step), x * 0.99 ** step)
    assert decayed.plan_count == 256 and decayed.fallback_calls
    torch.testing.assert_close(decayed(x, 3), x * 0.99 ** 3)  # a plan still serves its own step
