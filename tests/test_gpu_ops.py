"""GPU correctness of the native launch path (device machine; skipped without CUDA).

Every result is compared with torch; binaries with Triton's own JIT."""

import threading
import traceback

import pytest
import torch
import triton
import triton.language as tl

import torch_tile as tt
from torch_tile import kernels as K
from torch_tile.frontends.triton.kernels import kernel_id
from torch_tile import _testing

from conftest import requires_cuda

pytestmark = requires_cuda

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}


def _close(a, b, dtype, scale=1.0):
    torch.testing.assert_close(a.float(), b.float(), atol=TOL[dtype] * scale, rtol=TOL[dtype] * scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_add(dtype):
    for n in (1, 1000, 4096, 100_003):
        x = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.randn(n, device="cuda", dtype=dtype)
        _close(torch.ops.tile.add(x, y), x + y, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 7), (64, 1000), (5, 3000), (300, 128)])
def test_softmax(dtype, shape):
    x = torch.randn(shape, device="cuda", dtype=dtype)
    _close(torch.ops.tile.softmax(x), torch.softmax(x.float(), -1), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm(dtype):
    x = torch.randn(129, 700, device="cuda", dtype=dtype)
    w = torch.randn(700, device="cuda", dtype=dtype)
    b = torch.randn(700, device="cuda", dtype=dtype)
    out, mean, rstd = torch.ops.tile.layer_norm(x, w, b, 1e-5)
    ref_out, ref_mean, ref_rstd = torch.native_layer_norm(x.float(), [700], w.float(), b.float(), 1e-5)
    _close(out, ref_out, dtype, scale=4)
    torch.testing.assert_close(mean, ref_mean.squeeze(-1), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(rstd, ref_rstd.squeeze(-1), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk", [(128, 128, 128), (300, 200, 100), (1, 64, 33)])
def test_matmul(dtype, mnk):
    m, n, k = mnk
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    ref = a.double() @ b.double()
    got = torch.ops.tile.matmul(a, b).double()
    # fp32 goes through TF32 tensor cores (Triton's default for tl.dot).
    tol = {torch.float32: 2e-2, torch.float16: 2e-2, torch.bfloat16: 1e-1}[dtype] * k**0.5
    torch.testing.assert_close(got, ref, atol=tol, rtol=1e-2)


def test_add_inplace():
    x = torch.randn(5000, device="cuda")
    y = torch.randn(5000, device="cuda")
    expected = x + y
    assert torch.ops.tile.add_(x, y) is None
    torch.testing.assert_close(x, expected)


def test_misaligned_view_gets_its_own_variant():
    base_x = torch.randn(4097, device="cuda")
    base_y = torch.randn(4097, device="cuda")
    kid = kernel_id(K.add_kernel)
    torch.ops.tile.add(base_x[:4096], base_y[:4096])
    before = tt._C.variant_count(kid)
    x, y = base_x[1:], base_y[1:]  # storage offset 1: 4-byte aligned, not 16
    assert x.data_ptr() % 16 != 0
    out = torch.ops.tile.add(x, y)
    torch.testing.assert_close(out, x + y)
    assert tt._C.variant_count(kid) == before + 1
    # and the aligned variant still serves aligned inputs
    torch.testing.assert_close(torch.ops.tile.add(base_x[:4096], base_y[:4096]), base_x[:4096] + base_y[:4096])
    assert tt._C.variant_count(kid) == before + 1


def test_non_default_stream():
    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    torch.ops.tile.add(x, y)  # warm
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(200_000_000)  # keeps `s` busy for a long while
        out = torch.ops.tile.add(x, y)
        done = torch.cuda.Event()
        done.record(s)
    # The op was queued behind the sleep on `s`, not run on the default stream.
    assert not done.query()
    assert torch.cuda.current_stream().query()
    s.synchronize()
    torch.testing.assert_close(out, x + y)


def test_cuda_graph_capture_and_replay():
    x = torch.randn(3000, device="cuda")
    y = torch.randn(3000, device="cuda")
    s = torch.randn(64, 500, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up outside capture, as torch recommends
        torch.ops.tile.add(x, y)
        torch.ops.tile.softmax(s)
    torch.cuda.current_stream().wait_stream(side)
    counters = tt.runtime_counters()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        z = torch.ops.tile.add(x, y)
        p = torch.ops.tile.softmax(s)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        s.copy_(torch.randn_like(s))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(z, x + y)
        torch.testing.assert_close(p, torch.softmax(s, -1))
    assert tt.runtime_counters()["compiles"] == counters["compiles"]


def test_torch_compile_fullgraph():
    def f(x, y, s):
        h = torch.ops.tile.add(x, y) * 2
        return torch.ops.tile.softmax(s + 1), h.sum()

    x = torch.randn(2048, device="cuda")
    y = torch.randn(2048, device="cuda")
    s = torch.randn(32, 300, device="cuda")
    compiled = torch.compile(f, fullgraph=True)
    got = compiled(x, y, s)
    ref = (torch.softmax(s + 1, -1), ((x + y) * 2).sum())
    torch.testing.assert_close(got[0], ref[0])
    torch.testing.assert_close(got[1], ref[1], rtol=1e-4, atol=1e-3)


def test_binary_identical_to_triton_jit():
    for dtype, n in ((torch.float32, 4096), (torch.float16, 1000)):
        x = torch.randn(n, device="cuda", dtype=dtype)
        y = torch.randn(n, device="cuda", dtype=dtype)
        out = torch.empty_like(x)
        theirs = K.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        plan = K.add.trace(x, y)
        words = _testing.specialization_keys(plan, (x, y))[0]
        ours, _ = tt.compile_variant(plan.launches[0].kernel, words, 90)
        assert ours.asm["cubin"] == theirs.asm["cubin"]
        assert ours.metadata.name == theirs.metadata.name
    s = torch.randn(10, 3000, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(s)
    theirs = K.softmax_kernel[(10,)](out, s, s.stride(0), out.stride(0), 3000, BLOCK=4096, ACC=tl.float32,
                                    num_warps=8)
    plan = K.softmax.trace(s)
    ours, _ = tt.compile_variant(plan.launches[0].kernel, _testing.specialization_keys(plan, (s,))[0], 90)
    assert ours.asm["cubin"] == theirs.asm["cubin"]


def test_steady_state_no_python_no_extra_allocations():
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    torch.ops.tile.add(x, y)
    torch.cuda.synchronize()
    before = tt.runtime_counters()
    allocs_before = torch.cuda.memory_stats()["allocation.all.allocated"]
    n = 2000
    for _ in range(n):
        torch.ops.tile.add(x, y)
    torch.cuda.synchronize()
    after = tt.runtime_counters()
    assert after["host_entries"] == before["host_entries"]  # never called back into Python
    assert after["traces"] == before["traces"] and after["compiles"] == before["compiles"]
    assert after["map_lookups"] == before["map_lookups"]  # inline cache hit every time
    assert torch.cuda.memory_stats()["allocation.all.allocated"] - allocs_before == n  # the outputs only


def test_plan_selection_tries_the_last_selected_plan_first():
    # tile::softmax has a plan per dtype and per warps branch: four plans here, disjoint by their dtypes and
    # the branch's guard and its negation.
    tt._C.clear_plans("tile::softmax")
    xs = [torch.randn(8, 128, device="cuda", dtype=dt) for dt in (torch.float32, torch.float16, torch.bfloat16)]
    xs.append(torch.randn(4, 4096, device="cuda"))
    for x in xs:
        torch.ops.tile.softmax(x)
    last = xs[0]
    torch.ops.tile.softmax(last)  # now the last selected plan
    before = tt.runtime_counters()
    for _ in range(100):
        torch.testing.assert_close(torch.ops.tile.softmax(last), torch.softmax(last, -1))
    middle = tt.runtime_counters()
    assert middle["plan_scans"] == before["plan_scans"]  # the first plan tried served every call
    for i in range(40):  # alternating: each call scans, and still gets its own plan
        x = xs[(i + 1) % len(xs)]
        torch.testing.assert_close(torch.ops.tile.softmax(x), torch.softmax(x.float(), -1).to(x.dtype))
    after = tt.runtime_counters()
    assert after["plan_scans"] - middle["plan_scans"] == 40
    assert after["traces"] == before["traces"]


def test_dispatcher_call_from_cpp():
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    torch.ops.tile.add(x, y)
    seconds = _testing.bench_dispatcher("tile::add", (x, y), 10)
    assert seconds > 0


def test_concurrent_first_calls_compile_once():
    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)

    @tt.op("tile_test::scale3")
    def scale3(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), FACTOR=3, BLOCK=256)
        return out

    x = torch.randn(10_000, device="cuda")
    before = tt.runtime_counters()
    results, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        try:
            barrier.wait()
            results.append(torch.ops.tile_test.scale3(x))
        except BaseException:  # noqa: BLE001 - reported below (pytest's failures are BaseExceptions)
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, "\n".join(errors)
    assert len(results) == 8
    after = tt.runtime_counters()
    assert after["compiles"] - before["compiles"] == 1
    assert after["traces"] - before["traces"] == 1
    for r in results:
        torch.testing.assert_close(r, x * 3)


def test_branches_on_sizes_pick_the_right_plan():
    @triton.jit
    def fill_kernel(out_ptr, n, VALUE: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.full((BLOCK,), VALUE, tl.float32), mask=offs < n)

    @tt.op("tile_test::size_class")
    def size_class(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        value = 1 if n > 1000 else 2
        block = min(triton.next_power_of_2(n), 1024)
        fill_kernel[(triton.cdiv(n, block),)](out, n, VALUE=value, BLOCK=block)
        return out

    op = torch.ops.tile_test.size_class
    for n, value in ((10, 2), (5000, 1), (1000, 2), (1001, 1), (64, 2), (100_000, 1)):
        out = op(torch.empty(n, device="cuda"))
        torch.testing.assert_close(out, torch.full((n,), float(value), device="cuda"))


def test_large_shared_memory_opt_in():
    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)

    @tt.op("tile_test::big_matmul")
    def big_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        M, k = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), dtype=a.dtype, device=a.device)
        grid = (triton.cdiv(M, 128) * triton.cdiv(N, 256),)
        K.matmul_kernel[grid](a, b, c, M, N, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                              c.stride(1), BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_stages=4,
                              num_warps=8)
        return c

    plan = big_matmul.trace(a, b)
    compiled, _ = tt.compile_variant(plan.launches[0].kernel, _testing.specialization_keys(plan, (a, b))[0], 90)
    assert compiled.metadata.shared > 49152, compiled.metadata.shared
    got = torch.ops.tile_test.big_matmul(a, b)
    torch.testing.assert_close(got.float(), a.float() @ b.float(), atol=0.5, rtol=2e-2)


@triton.jit
def _tma_add_one_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Device-side tensor descriptors need Triton's global scratch memory.
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    m = tl.program_id(0) * BLOCK_M
    n = tl.program_id(1) * BLOCK_N
    dst.store([m, n], src.load([m, n]) + 1.0)


@tt.op("tile_test::tma_add_one")
def tma_add_one(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    M, N = x.shape
    _tma_add_one_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, out, M, N, BLOCK_M=64, BLOCK_N=64)
    return out


def test_global_scratch_memory_from_the_caching_allocator():
    x = torch.randn(256, 192, device="cuda")
    plan = tma_add_one.trace(x)
    compiled, _ = tt.compile_variant(plan.launches[0].kernel, _testing.specialization_keys(plan, (x,))[0], 90)
    assert compiled.metadata.global_scratch_size > 0  # the kernel really takes the trailing scratch pointer
    torch.testing.assert_close(torch.ops.tile_test.tma_add_one(x), x + 1)


@tt.op("tile_test::add_clustered")
def add_clustered(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    K.add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_ctas=2)
    return out


def test_num_ctas_cluster_launch():
    x = torch.randn(10_000, device="cuda")
    y = torch.randn(10_000, device="cuda")
    plan = add_clustered.trace(x, y)
    compiled, _ = tt.compile_variant(plan.launches[0].kernel, _testing.specialization_keys(plan, (x, y))[0], 90)
    assert compiled.metadata.num_ctas == 2
    torch.testing.assert_close(torch.ops.tile_test.add_clustered(x, y), x + y)
