"""Persistent matrix product through TMA tensor descriptors, autotuned.

``tile::matmul_tma(a, b) -> a @ b`` for 2-D bf16/fp16 tensors (fp32
accumulation): the kernel of Triton's persistent-matmul tutorial (host-side
``TensorDescriptor``s, one program per SM looping over output tiles in grouped
order, block shapes set per config by the autotuner's ``pre_hook``). In an op
body the descriptors are built in C++ per call (``cuTensorMapEncodeTiled``,
cached), the config is chosen once per (M, N, K, dtype) and persisted on disk.

TMA needs 16-byte aligned rows: K and N must be multiples of 8 elements
(16 bytes of bf16) and the tensors contiguous in their last dimension (and not
expanded along their rows); other inputs get a clear error at the call.
"""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import torch_tile as tt

from ._common import check_rows_contiguous, strides_of


def _set_block_shapes(nargs):
    """As Triton's tutorial: the descriptors' blocks follow the config."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn]


# A few of the tutorial's Hopper configs (each one is compiled and timed on the
# first call of a new shape).
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=stages, num_warps=warps,
                  pre_hook=_set_block_shapes)
    for bn, bk, stages, warps in ((128, 64, 4, 4), (128, 128, 3, 8), (256, 64, 3, 8), (256, 64, 4, 8))
]


@triton.jit
def _tile_position(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_tma_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    dtype = c_desc.dtype
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_position(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            b = b_desc.load([ki * BLOCK_K, offs_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([offs_m, offs_n], acc.to(dtype))


def _check_tma_rows(op: str, name: str, t) -> None:
    """Rows of ``t`` contiguous (TMA copies them whole) and at distinct addresses: an expanded view (row
    stride 0) is refused rather than left to the driver's tensor-map encoding, untested with it here.
    Row alignment is the descriptors' own check."""
    check_rows_contiguous(op, name, t)
    if t.stride(0) == 0 and t.shape[0] != 1:
        raise ValueError(f"{op}: {name} must not be expanded along its rows (stride 0) for a TMA descriptor, got "
                         f"strides {strides_of(t)}; pass {name}.contiguous()")


def num_sms(device) -> int:
    """Programs of the persistent grid: the GPU's SM count (a few on CPU/fake devices)."""
    if device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


@tt.op("tile::matmul_tma")
def matmul_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for 2-D bf16/fp16 tensors of one dtype, through TMA descriptors (Hopper or newer)."""
    op = "tile::matmul_tma"
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"{op}: a and b must be 2-D, got ranks {a.dim()} and {b.dim()}")
    if a.dtype != b.dtype or a.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"{op}: a and b must both be bfloat16 or float16, got {a.dtype} and {b.dtype}")
    M, K = a.shape
    if b.shape[0] != K:
        raise ValueError(f"{op}: a is {tuple(int(s) for s in a.shape)} but b is {tuple(int(s) for s in b.shape)}")
    N = b.shape[1]
    _check_tma_rows(op, "a", a)
    _check_tma_rows(op, "b", b)
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    sms = num_sms(a.device)
    placeholder = [8, 8]  # replaced by each config's pre_hook
    a_desc = TensorDescriptor(a, [M, K], [a.stride(0), a.stride(1)], placeholder)
    b_desc = TensorDescriptor(b, [K, N], [b.stride(0), b.stride(1)], placeholder)
    c_desc = TensorDescriptor(c, [M, N], [c.stride(0), c.stride(1)], placeholder)

    def grid(meta):
        return (tt.sym_min(sms, triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)

    matmul_tma_kernel[grid](a_desc, b_desc, c_desc, M, N, K, NUM_SMS=sms)
    return c
