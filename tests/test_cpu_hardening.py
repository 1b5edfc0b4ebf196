"""CPU tests: bad calls get a clear exception naming op and argument, never a
silently wrong result. The same calls on the CUDA path are in
tests/test_gpu_hardening.py; the example kernels' strides and dtypes are in
tests/test_cpu_hardening_kernels.py, the disk cache's faults in
tests/test_cpu_hardening_cache.py, threads and processes in
tests/test_cpu_hardening_concurrency.py.
"""

import pytest
import torch

import torch_tile as tt
from torch_tile import kernels  # noqa: F401  (registers tile::add, tile::add_)

from hardening_ops import (alloc, alloc_strict, check_allocation_rank_past_the_limit, copy_both, copy_into, flag_copy,
                           grid_copy, raw_add)


# -- partially overlapping in-place arguments ------------------------------------------------------------


def test_add_inplace_partial_overlap_is_refused_like_torch():
    a = torch.arange(2048.0)
    with pytest.raises(RuntimeError):  # torch's own refusal, for reference
        a[1:].add_(a[:-1])
    before = a.clone()
    with pytest.raises(ValueError, match=r"tile::add_: argument 'x' is written and partially overlaps argument 'y'"):
        torch.ops.tile.add_(a[1:], a[:-1])
    assert torch.equal(a, before)  # nothing ran


def test_add_inplace_same_tensor_is_allowed_like_torch():
    a = torch.arange(100.0)
    torch.ops.tile.add_(a, a)
    torch.testing.assert_close(a, torch.arange(100.0) * 2, rtol=0, atol=0)


def test_add_inplace_disjoint_views_of_one_storage_are_allowed():
    a = torch.arange(200.0)
    expected = a[:100] + a[100:]
    torch.ops.tile.add_(a[:100], a[100:])
    torch.testing.assert_close(a[:100], expected, rtol=0, atol=0)


def test_written_argument_with_internal_overlap_is_refused():
    target = torch.zeros(1).expand(16)
    with pytest.raises(ValueError, match=r"hardening::copy_into: argument 'out' is written, but several of its"):
        copy_into(target, torch.randn(16))


def test_two_written_arguments_on_one_memory_are_refused():
    t = torch.zeros(8)
    with pytest.raises(ValueError, match=r"argument 'a' is written and is the same memory as argument 'b'"):
        copy_both(t, t, torch.ones(8))
    a, b = torch.zeros(8), torch.zeros(8)
    copy_both(a, b, torch.ones(8))
    assert torch.equal(a, torch.ones(8)) and torch.equal(b, torch.ones(8))


def test_partial_overlap_is_refused_on_fake_tensors_too():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(64)
        with pytest.raises(ValueError, match="partially overlaps"):
            torch.ops.tile.add_(a[1:], a[:-1])


# -- tensors on different devices ------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["cpu_meta", "meta_cpu"])
def test_meta_mixed_with_cpu_is_refused(order):
    x, m = torch.randn(16), torch.empty(16, device="meta")
    with pytest.raises(RuntimeError):  # torch refuses in every order
        (x + m) if order == "cpu_meta" else (m + x)
    args = (x, m) if order == "cpu_meta" else (m, x)
    first, second = ("cpu", "meta") if order == "cpu_meta" else ("meta", "cpu")
    with pytest.raises(ValueError, match=rf"tile::add: argument 'y' expected a tensor on {first} like argument "
                                         rf"'x', got a tensor on {second}"):
        torch.ops.tile.add(*args)


def test_meta_mixed_with_cpu_is_refused_under_fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        x = mode.from_tensor(torch.randn(16))
        m = mode.from_tensor(torch.empty(16, device="meta"))
        with pytest.raises(ValueError, match="expected a tensor on cpu like argument 'x', got a tensor on meta"):
            torch.ops.tile.add(x, m)


# -- arguments of the wrong kind ---------------------------------------------------------------------------


def test_none_for_a_tensor_names_op_and_argument():
    with pytest.raises(TypeError, match=r"tile::add: argument 'y' expected a Tensor, got None"):
        torch.ops.tile.add(torch.randn(4), None)


def test_none_for_a_bool_is_refused_not_read_as_false():
    x = torch.randn(4)
    with pytest.raises(TypeError, match=r"hardening::flag_copy: argument 'flag' expected a bool, got None"):
        flag_copy(x, 4, None)
    torch.testing.assert_close(flag_copy(x, 4, True), x)


def test_none_for_an_int_is_refused():
    with pytest.raises((TypeError, RuntimeError), match=r"'n'"):
        flag_copy(torch.randn(4), None, True)


def test_a_dtype_no_plan_holds_names_op_argument_and_dtype():
    e8m0 = torch.empty(4, dtype=torch.float8_e8m0fnu)
    with pytest.raises(TypeError, match=r"tile::add: argument 'x' expected a dtype a launch plan can hold, got "
                                        r"torch.float8_e8m0fnu"):
        torch.ops.tile.add(e8m0, e8m0)


def test_a_complex_input_reaches_the_body_which_names_its_own_requirement():
    z = torch.randn(4, dtype=torch.complex64)
    with pytest.raises(ValueError, match=r"tile::add: x must be bool, .* got torch.complex64"):
        torch.ops.tile.add(z, z)


def test_tensor_subclass_is_traced_as_a_tensor():
    class Tagged(torch.Tensor):
        pass

    x = torch.randn(300)
    y = torch.randn(300)
    out = torch.ops.tile.add(x.as_subclass(Tagged), y.as_subclass(Tagged))
    torch.testing.assert_close(out.as_subclass(torch.Tensor), x + y, rtol=0, atol=0)


def test_output_rank_above_the_limit_names_the_op():
    x = torch.randn(2)
    assert alloc(x, 2, 3).shape == (3, 3)
    check_allocation_rank_past_the_limit(x)


def test_allocation_size_overflow_names_the_op():
    with pytest.raises(tt.TraceError, match=r"hardening::alloc_strict: .*would need more than 2\^63 bytes"):
        alloc_strict(torch.randn(2), 2, 2**40)
    with pytest.raises(RuntimeError) as info:  # run in Python, the body fails as it would without torch_tile
        alloc(torch.randn(2), 2, 2**40)
    assert "in the body of torch_tile op hardening::alloc" in "".join(getattr(info.value, "__notes__", []))


def test_the_process_keeps_working_after_refusals():
    x, y = torch.randn(64), torch.randn(64)
    for bad in [(x, None), (x.to(torch.complex64), y), (x, torch.empty(64, device="meta"))]:
        with pytest.raises((TypeError, ValueError)):
            torch.ops.tile.add(*bad)
    torch.testing.assert_close(torch.ops.tile.add(x, y), x + y, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16])
def test_cpu_path_refuses_dtypes_the_interpreter_computes_wrongly(dtype):
    x = torch.randn(16).to(dtype)
    with pytest.raises(NotImplementedError, match=rf"raw_add_kernel: Triton's interpreter .* wrong results for "
                                                  rf"{dtype}"):
        raw_add(x, x)
    y = torch.randn(16)
    torch.testing.assert_close(raw_add(y, y), y + y)


@tt.op("hardening::compare_tensors")
def compare_tensors(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    if x != y:  # a tensor in torch: as a branch condition it would be silently True
        flag_copy(x, 1, True)
    return out


def test_comparing_tensors_in_a_body_is_refused_not_a_python_bool():
    with pytest.raises(tt.TraceError, match=r"hardening::compare_tensors: .*test_cpu_hardening.py:\d+: "
                                            r"`bool\(ne\d+\)`: Boolean value of Tensor with more than one value is "
                                            r"ambiguous"):
        compare_tensors.trace(torch.randn(4), torch.randn(4))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        compare_tensors(torch.randn(4), torch.randn(4))  # run in Python (a fallback), as torch would run it


# -- grid dimensions -----------------------------------------------------------------------------------

GRID_LIMITS = (2**31 - 1, 65535, 65535)  # CUDA's, on every GPU torch_tile runs on


def _call_on(path: str, grid: tuple):
    """grid_copy on a 4-element tensor with ``grid`` through one path: the CPU interpreter, a trace, the
    meta (fake) implementation, or a dry run of the C++ plan executor (after a call that installed the plan,
    so that the executor evaluates the grid, not the trace)."""
    if path == "cpu":
        return grid_copy(torch.randn(4), *grid)
    if path == "trace":
        return grid_copy.trace(torch.randn(4), *grid)
    if path == "meta":
        return grid_copy(torch.empty(4, device="meta"), *grid)
    x = torch.randn(4)
    tt._C.variant_keys(grid_copy.qualname, (x, 1, 1, 1), {})
    return tt._C.variant_keys(grid_copy.qualname, (x, *grid), {})


def _bad_grid(d: int, value: int) -> tuple:
    grid = [1, 1, 1]
    grid[d] = value
    return tuple(grid)


@pytest.mark.parametrize("path", ["cpu", "trace", "meta", "dry_run"])
@pytest.mark.parametrize("d, value", [(0, -24), (1, -1), (2, -3), (0, 2**31), (1, 65536), (2, 70000)])
def test_grid_dimension_out_of_range_names_op_site_and_value(path, d, value):
    if path == "cpu" and value > 2**20:
        pytest.skip("unchecked, the interpreter would run 2^31 programs (the trace path covers this value)")
    with pytest.raises(ValueError, match=rf"hardening::grid_copy: grid dimension {d} of kernel grid_copy_kernel "
                                         rf"\(launched at [^)]*hardening_ops\.py:\d+\) is {value} \(`g[xyz]`\); "
                                         rf"expected 0 to {GRID_LIMITS[d]}"):
        _call_on(path, _bad_grid(d, value))


@pytest.mark.parametrize("grid", [(0, 1, 1), (3, 0, 1), (3, 2, 0)])
def test_grid_dimension_zero_launches_nothing(grid):
    x = torch.randn(1000)
    torch.testing.assert_close(grid_copy(x, *grid), torch.zeros_like(x), rtol=0, atol=0)
    assert grid_copy(torch.empty(1000, device="meta"), *grid).shape == (1000,)
    assert tt._C.variant_keys(grid_copy.qualname, (x, *grid), {}) == []  # no launch, no kernel key


def test_grid_at_the_limits_is_taken():
    x = torch.randn(2 * 128 * 3)
    expected = x.clone()
    torch.testing.assert_close(grid_copy(x, 2, 1, 3), expected, rtol=0, atol=0)
    for grid in [(GRID_LIMITS[0], 1, 1), (1, GRID_LIMITS[1], 1), (1, 1, GRID_LIMITS[2])]:
        assert grid_copy(torch.empty(4, device="meta"), *grid).shape == (4,)
        assert len(tt._C.variant_keys(grid_copy.qualname, (torch.randn(4), *grid), {})) == 1
