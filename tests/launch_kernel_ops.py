"""Test-local tile ops for launch attributes that the example kernels do not need
(shared by tests/test_cpu_launch_kernels.py and tests/test_gpu_launch_kernels.py;
importing registers them under ``torch.ops.tt_launch_test``):

* ``affine_cluster``: ``x * 2 + 1`` compiled with ``num_ctas=2`` (a cluster of two
  CTAs per program: cluster-dimension launch attribute, sm_90+).
* ``matmul_big_smem``: a tiled matmul whose pipelined operand buffers need more
  than 48 KB of dynamic shared memory on sm_90 (the launcher must raise the
  kernel's ``MAX_DYNAMIC_SHARED_SIZE_BYTES``). ``SMEM_CONFIGS`` gives ~96 KB for
  every dtype when the operands' strides are multiples of 16 elements (otherwise
  Triton may not pipeline and needs less).
* ``cooperative_program_ids``: a cooperative launch of ``n`` programs, each
  writing its id; with ``TOO_MANY_PROGRAMS`` they cannot all be co-resident and
  the driver must refuse the launch.
"""

import torch
import triton
import triton.language as tl

import torch_tile as tt

NS = "tt_launch_test"

CLUSTER_BLOCK = 2048

# dtype -> (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps); num_stages buffers of
# (BLOCK_M + BLOCK_N) * BLOCK_K elements: 96 KB for each.
SMEM_CONFIGS = {
    torch.float16: (128, 128, 64, 3, 8),
    torch.bfloat16: (128, 128, 64, 3, 8),
    torch.float32: (128, 128, 32, 3, 8),
}

TOO_MANY_PROGRAMS = 1_000_000  # any GPU co-schedules at most (32 blocks per SM) x (SMs): a few thousand


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2 + 1, mask=mask)


@tt.op(f"{NS}::affine_cluster")
def affine_cluster(x: torch.Tensor) -> torch.Tensor:
    """x * 2 + 1 for a contiguous x, one cluster of 2 CTAs per block of CLUSTER_BLOCK elements."""
    if not x.is_contiguous():
        raise ValueError(f"{NS}::affine_cluster: x must be contiguous")
    out = torch.empty_like(x)
    n = x.numel()
    affine_kernel[(triton.cdiv(n, CLUSTER_BLOCK),)](x, out, n, BLOCK=CLUSTER_BLOCK, num_warps=4, num_ctas=2)
    return out


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@tt.op(f"{NS}::matmul_big_smem")
def matmul_big_smem(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b (float16, bfloat16 or float32 with TF32 tensor cores) with a large pipelined tile."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"{NS}::matmul_big_smem: cannot multiply {a.dtype} {tuple(a.shape)} by "
                         f"{b.dtype} {tuple(b.shape)}")
    if a.dtype not in SMEM_CONFIGS:
        raise ValueError(f"{NS}::matmul_big_smem: dtype {a.dtype} is not supported")
    BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps = SMEM_CONFIGS[a.dtype]
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    mm_kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_stages=num_stages, num_warps=num_warps)
    return c


@triton.jit
def program_id_kernel(out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid)


@tt.op(f"{NS}::cooperative_program_ids")
def cooperative_program_ids(like: torch.Tensor, n: int) -> torch.Tensor:
    """torch.arange(n, dtype=torch.int32) on like's device, from a cooperative launch of n programs."""
    out = torch.empty((n,), dtype=torch.int32, device=like.device)
    program_id_kernel[(n,)](out, launch_cooperative_grid=True)
    return out
