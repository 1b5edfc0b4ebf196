"""CPU tests: tensor layouts are judged by torch's own rules everywhere. Contiguity is c10's (every tensor
with no element is contiguous; size-1 dimensions' strides do not count), non-overlapping-and-dense is
c10's (contiguous, or contiguous in some order of the dimensions), and an allocation like a tensor keeps
its strides when torch's empty_like would. Ops take empty inputs and return empty outputs, launching
nothing."""

import itertools

import pytest
import torch

import torch_tile as tt
from torch_tile import _C
from torch_tile import kernels  # noqa: F401  (registers tile::add)
from torch_tile.trace.stand_ins import is_contiguous, is_non_overlapping_and_dense
from torch_tile import _testing

from hardening_ops import grid_copy

_fresh = itertools.count()
SIZES = (0, 1, 2, 3)
STRIDES = (0, 1, 2, 3, 7)


def layouts():
    """Every (sizes, strides) of rank 0 to 3 over SIZES and STRIDES."""
    for rank in range(4):
        for sizes in itertools.product(SIZES, repeat=rank):
            for strides in itertools.product(STRIDES, repeat=rank):
                yield sizes, strides


def strided(sizes, strides) -> torch.Tensor:
    """A tensor with this layout, over a storage large enough for it."""
    extent = 1 + sum((s - 1) * st for s, st in zip(sizes, strides) if s > 0)
    return torch.empty(max(extent, 1)).as_strided(sizes, strides)


def test_contiguity_and_density_follow_torch_on_every_layout():
    wrong = []
    for sizes, strides in layouts():
        t = strided(sizes, strides)
        torch_says = (t.is_contiguous(), torch.ops.aten.is_non_overlapping_and_dense(t))
        ours = (is_contiguous(sizes, strides), is_non_overlapping_and_dense(sizes, strides))
        if ours != torch_says:
            wrong.append((sizes, strides, "torch:", torch_says, "torch_tile:", ours))
    assert wrong == [], f"{len(wrong)} layouts judged differently, e.g. {wrong[:5]}"


@pytest.mark.parametrize("sizes, strides", [((5, 0), (1, 1)), ((5, 0), (3, 7)), ((0, 0), (1, 1)),
                                            ((2, 0, 3), (3, 3, 1)), ((2, 0, 3), (0, 0, 0)), ((3, 1), (1, 5)),
                                            ((2, 1, 3), (3, 9, 1)), ((1, 1), (7, 9))])
def test_a_stand_in_answers_is_contiguous_as_torch(sizes, strides):
    seen = {}

    @tt.op(f"layouts_{next(_fresh)}::probe")
    def probe(x: torch.Tensor) -> torch.Tensor:
        seen["contiguous"] = x.is_contiguous()
        return torch.empty_like(x)

    x = strided(sizes, strides)
    probe.trace(x)
    assert seen["contiguous"] == x.is_contiguous()


# Contiguous layouts whose strides are not the ones torch.empty would give: empty tensors, size-1 dimensions.
UNUSUAL_CONTIGUOUS = [((5, 0), (3, 7)), ((0, 0), (2, 5)), ((2, 0, 3), (0, 0, 0)), ((3, 1), (1, 5)),
                      ((2, 1, 3), (3, 9, 1)), ((4, 1), (1, 4))]


@pytest.mark.parametrize("sizes, strides", UNUSUAL_CONTIGUOUS)
def test_the_native_allocator_lays_out_empty_like_as_torch(sizes, strides):
    # cpp_test::scale allocates empty_like(x) through the C++ allocator; its Meta kernel dry-runs the plan.
    # The reference is ATen's own empty_like (the CPU and CUDA kernel; torch's meta one differs here).
    _testing.define_cpp_test_ops()
    x = strided(sizes, strides)
    out, _ = torch.ops.cpp_test.scale(x.to("meta"), 2.0)
    assert out.stride() == torch.empty_like(x).stride() == strides


# -- empty inputs ---------------------------------------------------------------------------------------

EMPTY_SHAPES = [(5, 0), (0, 0), (2, 0, 3), (0,), (0, 7), (1, 0, 1)]


@pytest.mark.parametrize("shape", EMPTY_SHAPES)
def test_add_of_empty_tensors_is_empty_on_cpu(shape):
    x, y = torch.randn(shape), torch.randn(shape)
    out = torch.ops.tile.add(x, y)
    assert out.shape == shape and out.dtype == x.dtype
    torch.testing.assert_close(out, x + y)


@pytest.mark.parametrize("shape", EMPTY_SHAPES)
def test_add_of_empty_tensors_is_empty_on_meta_and_launches_nothing(shape):
    x = torch.randn(shape)
    out = torch.ops.tile.add(x.to("meta"), x.to("meta"))
    assert out.shape == shape and out.is_meta
    assert _C.variant_keys("tile::add", (x, x), {}) == []  # a 0 grid: no launch, no kernel key


def test_empty_input_with_a_zero_grid_launches_nothing():
    x = torch.randn(0)
    assert grid_copy(x, 0, 1, 1).shape == (0,)
    assert _C.variant_keys(grid_copy.qualname, (x, 0, 1, 1), {}) == []
