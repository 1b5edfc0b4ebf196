"""Bad input on the native CUDA path: each a clear Python exception naming the
op, the argument, what was expected and what came; the process keeps working."""

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import kernels as K  # noqa: F401  (registers tile::*)

from conftest import requires_cuda, requires_two_gpus

pytestmark = requires_cuda


def _still_works():
    x = torch.randn(100, device="cuda")
    torch.testing.assert_close(torch.ops.tile.add(x, x), x + x)
    torch.cuda.synchronize()  # no sticky CUDA error


def test_mixed_cpu_and_cuda():
    x = torch.randn(10, device="cuda")
    with pytest.raises(ValueError, match=r"tile::add: argument 'y' expected a CUDA tensor.*got a tensor on cpu"):
        torch.ops.tile.add(x, torch.randn(10))
    _still_works()


@requires_two_gpus
def test_two_gpus():
    x = torch.randn(10, device="cuda:0")
    y = torch.randn(10, device="cuda:1")
    with pytest.raises(ValueError, match=r"argument 'y' expected a tensor on cuda:0 like argument 'x'.*cuda:1"):
        torch.ops.tile.add(x, y)
    # and the same op works on the second device alone
    torch.testing.assert_close(torch.ops.tile.add(y, y), y + y)
    _still_works()


def test_wrong_arity_and_types():
    x = torch.randn(10, device="cuda")
    with pytest.raises((TypeError, RuntimeError), match="add"):
        torch.ops.tile.add(x)
    with pytest.raises((TypeError, RuntimeError), match="add"):
        torch.ops.tile.add(x, 3.0)
    _still_works()


def test_unsupported_dtype():
    x = torch.empty(10, device="cuda", dtype=torch.float8_e8m0fnu)
    expected = r"tile::add: argument 'x' expected a dtype a launch plan can hold, got torch\.float8_e8m0fnu"
    with pytest.raises(TypeError, match=expected):
        torch.ops.tile.add(x, x)
    _still_works()


@triton.jit
def _i32_kernel(out_ptr, n: tl.int32, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), n, tl.int64), mask=offs < 1)


@tt.op("tile_test::store_i32")
def store_i32(out_like: torch.Tensor, n: int) -> torch.Tensor:
    out = torch.empty_like(out_like)
    _i32_kernel[(1,)](out, n, BLOCK=16)
    return out


def test_scalar_overflowing_parameter_width():
    like = torch.empty(1, device="cuda", dtype=torch.int64)
    assert torch.ops.tile_test.store_i32(like, 7).item() == 7
    with pytest.raises(ValueError, match=r"tile_test::store_i32: argument 1 of kernel _i32_kernel .* is 8589934592, "
                                         r"which does not fit the parameter's type i32"):
        torch.ops.tile_test.store_i32(like, 2**33)
    _still_works()


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + tl.program_id(1) * 0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@tt.op("tile_test::tall_grid")
def tall_grid(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    _copy_kernel[(1, x.numel())](x, out, x.numel(), BLOCK=16)
    return out


def test_grid_beyond_device_limits():
    with pytest.raises(ValueError, match=r"tile_test::tall_grid: grid dimension 1 of kernel _copy_kernel .* is 70000 "
                                         r"\(`.*`\); expected 0 to 65535"):
        torch.ops.tile_test.tall_grid(torch.randn(70000, device="cuda"))
    _still_works()


def test_empty_input_is_a_noop():
    x = torch.randn(0, device="cuda")
    out = torch.ops.tile.add(x, x)
    assert out.shape == (0,)
    _still_works()


@triton.jit
def _broken_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + undefined_name)  # noqa: F821


@tt.op("tile_test::broken", mutates_args=("x",))
def broken(x: torch.Tensor) -> None:
    _broken_kernel[(1,)](x, BLOCK=16)


def test_kernel_that_fails_to_compile():
    x = torch.zeros(16, device="cuda")
    with pytest.raises(Exception, match="undefined_name") as info:
        torch.ops.tile_test.broken(x)
    assert "_broken_kernel" in str(info.value) or "_broken_kernel" in repr(info.traceback)
    _still_works()


def _bad_body(x: torch.Tensor) -> torch.Tensor:
    return torch.full((int(x.sum().item()),), 1.0, device=x.device)


tt.op("tile_test::bad_body", _bad_body, fallback=False)
tt.op("tile_test::bad_body_fallback", _bad_body)


def test_body_the_tracer_cannot_take():
    x = torch.ones(4, device="cuda")
    with pytest.raises(tt.TraceError, match=r"tile_test::bad_body: .*test_gpu_errors.py:\d+: .*depends on the "
                                            r"tensors' data"):
        torch.ops.tile_test.bad_body(x)
    with pytest.warns(RuntimeWarning, match=r"tile_test::bad_body_fallback: calls like this one run the op body in "
                                            r"Python .*depends on the tensors' data"):
        out = torch.ops.tile_test.bad_body_fallback(x)
    torch.testing.assert_close(out, _bad_body(x), rtol=0, atol=0)
    _still_works()
