"""GPU tests of TMA tensor descriptors built by the C++ launch path: results
against torch, the descriptor cache (counter), errors for tensors TMA cannot
address (naming op and parameter, CUDA left usable), CUDA-graph capture, and
the autotuned persistent TMA matmul against cuBLAS. Device machine only
(sm_90+)."""

import pytest
import torch

import torch_tile as tt
from torch_tile import kernels as K

import tma_ops as T
from conftest import requires_sm90

pytestmark = requires_sm90("tensor descriptors (TMA)")


def _encodes() -> int:
    return tt.runtime_counters()["tensor_map_encodes"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
# Rows must be 16-byte aligned for TMA (multiples of 8 columns serve every dtype
# here); sizes that are not multiples of the 32x32 block exercise TMA's
# out-of-bounds handling. Unaligned rows are the error tests' subject.
@pytest.mark.parametrize("shape", [(64, 64), (70, 104), (1, 8), (257, 520)])
def test_descriptor_op_matches_torch(dtype, shape):
    x = torch.randn(*shape, device="cuda").to(dtype)
    torch.testing.assert_close(T.scale(x, 1.5), (x.float() * 1.5).to(dtype))


def test_in_place_store_through_a_descriptor():
    x = torch.randn(96, 128, device="cuda")
    want = x * -2.0
    T.scale_(x, -2.0)
    torch.testing.assert_close(x, want)


def test_repeated_calls_reuse_the_encoded_descriptors():
    x = torch.ones(128, 64, device="cuda")
    T.scale_(x, 1.0)  # warm: plan, variant, the map of x
    before = _encodes()
    for _ in range(20):
        T.scale_(x, 2.0)
    torch.cuda.synchronize()
    torch.testing.assert_close(x, torch.full_like(x, 2.0**20))
    assert _encodes() == before  # same tensor, same map: never re-encoded
    # A shape no earlier test used, so no cached map can match (the allocator may
    # hand back an address an earlier tensor of another shape had): one new map,
    # shared by the kernel's two parameters.
    y = torch.ones(40, 64, device="cuda")
    T.scale_(y, 3.0)
    torch.testing.assert_close(y, torch.full_like(y, 3.0))
    assert _encodes() == before + 1
    a, b = torch.randn(128, 64, device="cuda"), torch.randn(128, 64, device="cuda")
    torch.testing.assert_close(T.add3(a, b), a + b)


def test_unaligned_base_is_a_clear_error_and_cuda_stays_usable():
    x = torch.randn(64, 72, device="cuda")
    view = x[:, 1:65]  # last dim contiguous, base 4 bytes into the storage
    with pytest.raises(ValueError, match=r"tt_test_tma::scale: tensor descriptor 'in_desc' of kernel scale_kernel "
                                         r".*base address 0x[0-9a-f]+ is not 16-byte aligned"):
        T.scale(view, 2.0)
    torch.testing.assert_close(T.scale(view.contiguous(), 2.0), view * 2.0)
    torch.testing.assert_close(x + 1, x.cpu().cuda() + 1)  # no sticky CUDA error


def test_bad_strides_are_clear_errors():
    with pytest.raises(ValueError, match=r"strides \[100, 1\] \(elements of 2 bytes\)"):
        T.scale(torch.randn(64, 100, device="cuda", dtype=torch.float16), 2.0)
    with pytest.raises(ValueError, match=r"last dimension must be contiguous"):
        T.scale(torch.randn(64, 64, device="cuda").t(), 2.0)


def test_descriptor_op_in_a_cuda_graph():
    x = torch.randn(128, 128, device="cuda")
    T.scale(x, 3.0)  # warm
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = T.scale(x, 3.0)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 3.0)


@pytest.mark.parametrize("m,n,k", [(512, 384, 256), (300, 264, 136), (1024, 1024, 1024)])
def test_tma_matmul_matches_cublas(m, n, k):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    got = K.matmul_tma(a, b)
    torch.testing.assert_close(got.float(), (a @ b).float(), atol=0.5, rtol=2e-2)


def test_tma_matmul_rejects_rows_tma_cannot_address():
    a = torch.randn(64, 100, device="cuda", dtype=torch.bfloat16)  # 200-byte rows
    b = torch.randn(100, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="tile::matmul_tma: tensor descriptor 'a_desc'.*multiples? of 16 bytes"):
        K.matmul_tma(a, b)
