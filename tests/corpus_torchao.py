"""Real host wrappers of torchao's Triton kernels, called unchanged from torch_tile op bodies.

Library: torchao==0.18.0 (module ``torchao``): ``pip install --no-deps torchao==0.18.0`` (its compiled extensions
are not needed: every entry here is a Triton wrapper). The module is skipped without it (``pytest.importorskip``).

torchao defines many of its Triton wrappers only ``if torch.utils._triton.has_triton()``, which is False on a
machine without a GPU (Triton has no CPU backend), so those are absent where CI runs; this corpus takes the
wrappers defined unconditionally: int8 matmuls (``torchao.kernel.intmm_triton``, the quantized-training
``scaled_int8_mm``), HQQ's int4 mixed matmul, the float8-nocompile and FP8 attention (SDPA) quantizers, the
blockwise-FP8 training quantizers and GEMM (``torch.library.triton_op``s: the kernels launch through
``wrap_triton``), and the MoE expert-parallel permutation helpers; plus one ``has_triton()``-guarded wrapper
(``fp8_blockwise_act_quant``) that needs a GPU even to trace. FP8 outputs cannot be computed by Triton's interpreter
(numpy has no fp8): those cases are GPU-only on the CPU path, and tracing them needs no GPU.
"""

from dataclasses import replace
from typing import List, Optional, Tuple

import pytest
import torch

pytest.importorskip("torchao", reason="needs torchao==0.18.0 (pip install --no-deps torchao==0.18.0)")

from torchao.kernel import intmm_triton  # noqa: E402
from torchao.kernel.blockwise_quantization import fp8_blockwise_act_quant  # noqa: E402
from torchao.prototype.attention.quantization.triton_qkv_quantization import triton_fp8_sdpa_quantize  # noqa: E402
from torchao.prototype.attention.quantization.triton_rope_qkv_quantization import (  # noqa: E402
    triton_fp8_rope_sdpa_quantize,
)
from torchao.prototype.blockwise_fp8_training.kernels import (  # noqa: E402
    triton_fp8_blockwise_act_quant_lhs,
    triton_fp8_blockwise_weight_quant_rhs,
    triton_fp8_gemm_1x128_128x128,
)
from torchao.prototype.float8nocompile.kernels.fp8_dynamic_tensorwise import (  # noqa: E402
    KernelAlgorithm,
    LinearMMConfig,
    hp_to_fp8_row_and_col_major,
    hp_to_fp8_row_major,
)
from torchao.prototype.fp8_sdpa_inference.fp8_sdpa_quantization import fp8_sdpa_quantize_func  # noqa: E402
from torchao.prototype.hqq.mixed_mm import triton_mixed_mm  # noqa: E402
from torchao.prototype.moe_training.ep.kernels import generate_permute_indices  # noqa: E402
from torchao.prototype.moe_training.ep.permute import permute_and_pad  # noqa: E402
from torchao.prototype.quantized_training.int8_mm import scaled_int8_mm, scaled_int8_mm_cuda  # noqa: E402

from wrapper_corpus import Case, Entry, Inputs, Tensor, bf16, f16, f32, strided  # noqa: E402

NS = "torchao_tt"  # not "torchao": torchao registers torchao::int_matmul, torchao::scaled_int8_mm... itself
E4M3 = torch.float8_e4m3fn
E4M3_MAX = 448.0

BF16_CPU = "bf16: Triton's interpreter computes bf16 wrongly (torch_tile refuses it on CPU)"
FP8_CPU = "fp8 tensors: numpy has no fp8, Triton's interpreter computes them wrongly (torch_tile refuses them on CPU)"
NO_TRITON = ("torchao builds these kernels only when torch.utils._triton.has_triton() is True, which needs a GPU "
             "(Triton has no CPU backend): without one the wrapper raises 'unsupported without triton' before any "
             "launch, also under TRITON_INTERPRET=1")


def _case(id, make, dtype=f32, gpu_only=""):
    return Case(id, make, dtype, gpu_only or (BF16_CPU if dtype == bf16 else ""))


def _int8(r, *shape, high=256):
    return r.randint(high, *shape, dtype=torch.int32).sub(high // 2).to(torch.int8)


def _fp8_quant(x, scale):
    """x * scale saturated to e4m3 (what the kernels store), from fp32 math."""
    return (x.float() * scale).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3)


# -- int8 matmuls -----------------------------------------------------------------------------------------------


def int_matmul_op(a: Tensor, b: Tensor) -> Tensor:
    """torchao's int_matmul CUDA impl with its autotuning (get_best_config_fn, a GPU benchmark) replaced by the
    first of torchao's own configs: the launcher itself is unchanged."""
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.int32)
    return intmm_triton.int_matmul_kernel(a, b, c, intmm_triton.int8_mm_kernel_configs[0])


def int_matmul_ref(a, b):
    # int64 matmul exists on CPU only (CUDA has no integer addmm): exact there.
    return (a.cpu().long() @ b.cpu().long()).to(device=a.device, dtype=torch.int32)


def int_scaled_matmul_op(a: Tensor, b: Tensor, scales1: Tensor) -> Tensor:
    M, K = a.shape
    K, N = b.shape
    scales1 = scales1.expand((M, N))  # as torchao.kernel.intmm.int_scaled_matmul does before the op
    c = torch.empty((M, N), device=a.device, dtype=scales1.dtype)
    return intmm_triton.int_scaled_matmul_kernel(a, b, scales1, c, intmm_triton.int8_mm_kernel_configs[0])


def int_scaled_matmul_ref(a, b, scales1):
    return ((a.double() @ b.double()) * scales1.double()).to(scales1.dtype)


def _intmm_case(id, M, K, N, layout=None, scale_dtype=None, high=256):
    def make(device):
        r = Inputs(device)
        a, b = _int8(r, M, K, high=high), _int8(r, K, N, high=high)
        b = layout(b) if layout else b
        if scale_dtype is None:
            return (a, b)
        return (a, b, (r.rand(M, 1) * 1e-3).to(scale_dtype))
    return _case(id, make, scale_dtype or f32)


def scaled_int8_mm_cuda_op(A: Tensor, B: Tensor, row_scale: Tensor, col_scale: Tensor) -> Tensor:
    return scaled_int8_mm_cuda(A, B, row_scale, col_scale)


def scaled_int8_mm_op(A: Tensor, B: Tensor, row_scale: Tensor, col_scale: Tensor) -> Tensor:
    return scaled_int8_mm(A, B, row_scale, col_scale)


def scaled_int8_mm_ref(A, B, row_scale, col_scale):
    c = (A.double() @ B.double()) * row_scale.double().view(-1, 1) * col_scale.double().view(1, -1)
    return c.to(row_scale.dtype)


def _scaled_mm_case(id, M, K, N, dtype=f32, scalar_col=False, layout=None):
    def make(device):
        r = Inputs(device)
        A, B = _int8(r, M, K), _int8(r, K, N)
        row = (r.rand(M) * 1e-2).to(dtype)
        col = (r.rand(()) if scalar_col else r.rand(N)).mul(1e-2).to(dtype)
        return (A, layout(B) if layout else B, row, col)
    return _case(id, make, dtype)


def mixed_mm_op(a: Tensor, b: Tensor, scales: Tensor, zeros: Tensor, group_size: int) -> Tensor:
    return triton_mixed_mm(a, b, scales, zeros, group_size, transposed=False, kernel_type="compute_bound")


def mixed_mm_ref(a, b, scales, zeros, group_size):
    lo, hi = (b & 0xF), (b >> 4) & 0xF  # pack_2xint4: row 2i in the low nibble, row 2i + 1 in the high one
    w = torch.stack([lo, hi], 1).reshape(-1, b.shape[1]).float()
    g = torch.arange(w.shape[0], device=b.device) // group_size
    w = (w - zeros.float()[g]) * scales.float()[g]
    return (a.float() @ w).to(a.dtype)


def _mixed_mm_case(id, M, K, N, group_size, dtype=f32):
    def make(device):
        r = Inputs(device)
        w = r.randint(16, K, N, dtype=torch.uint8)
        packed = (w[0::2] & 0xF) | (w[1::2] << 4)
        # HQQ keeps scales/zeros as (N, groups) and hands the kernel their transpose (groups, N), stride_k == 1:
        # the kernel's scale offset, k * BLOCK_K * stride_scale_k // QGROUP_SIZE, is a group index only then
        scales = (r.rand(N, K // group_size) * 0.1).to(dtype).t()
        zeros = (r.rand(N, K // group_size) * 8).to(dtype).t()
        return (r.randn(M, K, dtype=dtype), packed, scales, zeros, group_size)
    return _case(id, make, dtype)


# -- float8 tensorwise (float8nocompile) -------------------------------------------------------------------------


def _tensorwise_scale(x):
    return E4M3_MAX / x.float().abs().max().clamp(min=1e-12)


def hp_to_fp8_row_major_op(hp_tensor: Tensor, algo: str = "ATOMIC_MAX") -> Tuple[Tensor, Tensor]:
    t = hp_to_fp8_row_major(hp_tensor, E4M3, LinearMMConfig(), algo=KernelAlgorithm[algo])
    return t._data, t._scale  # the Float8TrainingTensor's fp8 data and its scale


def hp_to_fp8_row_major_ref(hp_tensor, algo="ATOMIC_MAX"):
    s = _tensorwise_scale(hp_tensor)
    return _fp8_quant(hp_tensor, s), s


def hp_to_fp8_row_and_col_major_op(hp_tensor: Tensor, algo: str = "ATOMIC_MAX") -> Tuple[Tensor, Tensor, Tensor]:
    row, col = hp_to_fp8_row_and_col_major(hp_tensor, E4M3, LinearMMConfig(), algo=KernelAlgorithm[algo])
    return row._data, col._data, row._scale


def hp_to_fp8_row_and_col_major_ref(hp_tensor, algo="ATOMIC_MAX"):
    s = _tensorwise_scale(hp_tensor)
    q = _fp8_quant(hp_tensor, s)
    return q, q, s


def _hp_case(id, shape, dtype=f32, algo="ATOMIC_MAX"):
    def make(device):
        return (Inputs(device).randn(*shape, dtype=dtype), algo)
    return _case(id, make, dtype, FP8_CPU)


# -- FP8 attention quantizers ------------------------------------------------------------------------------------


def _per_head_quant(x, heads_kv):
    """x: (B, H, S, D): per-(batch, kv head group) amax -> fp8 data, descale (B, H_kv)."""
    B, H, S, D = x.shape
    groups = H // heads_kv
    amax = x.float().reshape(B, heads_kv, groups * S * D).abs().amax(-1)
    scale = torch.where(amax > 1e-12, E4M3_MAX / amax, torch.ones_like(amax))
    descale = torch.where(amax > 1e-12, amax / E4M3_MAX, torch.ones_like(amax))
    full = scale.repeat_interleave(groups, dim=1)[:, :, None, None]
    return _fp8_quant(x, full), descale


def _qkv_ref(q, k, v):
    hk = k.shape[1]
    (qf, qd), (kf, kd), (vf, vd) = _per_head_quant(q, hk), _per_head_quant(k, hk), _per_head_quant(v, hk)
    return qf, kf, vf, qd, kd, vd


def sdpa_quantize_op(q: Tensor, k: Tensor, v: Tensor, num_chunks: Optional[int] = None) -> Tuple[
        Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    return triton_fp8_sdpa_quantize(q, k, v, num_chunks)


def sdpa_quantize_ref(q, k, v, num_chunks=None):
    return _qkv_ref(q, k, v)


def fp8_sdpa_quantize_func_op(q: Tensor, k: Tensor, v: Tensor, num_chunks: Optional[int] = None) -> Tuple[
        Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    return fp8_sdpa_quantize_func(q, k, v, num_chunks)


def _qkv_case(id, dtype=f16, B=2, H=4, Hkv=4, Sq=16, Skv=16, D=32, chunks=2, layout=None):
    def make(device):
        r = Inputs(device)
        q = r.randn(B, H, Sq, D, dtype=dtype)
        k, v = r.randn(B, Hkv, Skv, D, dtype=dtype), r.randn(B, Hkv, Skv, D, dtype=dtype)
        return (layout(q) if layout else q, k, v, chunks)
    return _case(id, make, dtype, FP8_CPU)


def rope_sdpa_quantize_op(q: Tensor, k: Tensor, v: Tensor, cos: Tensor, sin: Tensor,
                          num_chunks: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    return triton_fp8_rope_sdpa_quantize(q, k, v, cos, sin, num_chunks)


def rope_sdpa_quantize_ref(q, k, v, cos, sin, num_chunks=None):
    def rope(x):  # (B, S, H, D), NeoX halves, cos/sin (S, D)
        x = x.float()
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos.float()[None, :, None, :] + rot * sin.float()[None, :, None, :]
    qr, kr = rope(q).transpose(1, 2), rope(k).transpose(1, 2)
    return _qkv_ref(qr, kr, v.float().transpose(1, 2))


def _rope_qkv_case(id, dtype=f16, B=2, S=16, H=4, Hkv=2, D=32, chunks=2):
    def make(device):
        r = Inputs(device)
        inv = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
        freqs = torch.outer(torch.arange(S, dtype=torch.float32), inv)
        emb = torch.cat([freqs, freqs], -1)
        cos, sin = emb.cos().to(dtype=dtype, device=device), emb.sin().to(dtype=dtype, device=device)
        q, k, v = (r.randn(B, S, h, D, dtype=dtype) for h in (H, Hkv, Hkv))
        return (q, k, v, cos, sin, chunks)
    return _case(id, make, dtype, FP8_CPU)


# -- blockwise FP8 training (torch.library.triton_op wrappers) -----------------------------------------------------


def act_quant_lhs_op(x: Tensor, block_size: int = 128) -> Tuple[Tensor, Tensor]:
    return triton_fp8_blockwise_act_quant_lhs(x, block_size)


def act_quant_lhs_ref(x, block_size=128):
    M, K = x.shape
    blocks = x.float().view(M, K // block_size, block_size)
    amax = blocks.abs().amax(-1).clamp(min=1e-12).double()
    scale = (E4M3_MAX / amax).float()
    y = _fp8_quant(blocks, scale[..., None]).view(M, K)
    return y, 1.0 / scale


def weight_quant_rhs_op(x: Tensor, block_size: int = 128) -> Tuple[Tensor, Tensor]:
    return triton_fp8_blockwise_weight_quant_rhs(x, block_size)


def weight_quant_rhs_ref(x, block_size=128):
    M, N = x.shape
    blocks = x.float().view(M // block_size, block_size, N // block_size, block_size)
    amax = blocks.abs().amax((1, 3)).clamp(min=1e-12).double()
    scale = (E4M3_MAX / amax).float()
    y = _fp8_quant(blocks, scale[:, None, :, None]).view(M, N)
    return y, 1.0 / scale


def _blockwise_case(id, M, K, dtype=f32):
    def make(device):
        return (Inputs(device).randn(M, K, dtype=dtype), 128)
    return _case(id, make, dtype, FP8_CPU)


def fp8_gemm_op(a: Tensor, b: Tensor, a_s: Tensor, b_s: Tensor, block_size: int = 128,
                out_dtype: torch.dtype = torch.float32) -> Tensor:
    return triton_fp8_gemm_1x128_128x128(a, b, a_s, b_s, block_size, out_dtype)


def fp8_gemm_ref(a, b, a_s, b_s, block_size=128, out_dtype=torch.float32):
    a_deq = a.float() * a_s.float().repeat_interleave(block_size, 1)
    b_deq = b.float() * b_s.float().repeat_interleave(block_size, 0).repeat_interleave(block_size, 1)
    return (a_deq @ b_deq).to(out_dtype)


def _fp8_gemm_case(id, M, K, N, out_dtype=f32, tol_scale=1.0):
    def make(device):
        r = Inputs(device)
        a = r.randn(M, K).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3)
        b = r.randn(N, K).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3).t()  # column-major (K, N)
        a_s = r.rand(K // 128, M).add(0.5).t()  # column-major (M, K // 128)
        b_s = r.rand(N // 128, K // 128).add(0.5).t()  # column-major (K // 128, N // 128)
        return (a.to(device), b.to(device), a_s.to(device), b_s.to(device), 128, out_dtype)
    return replace(_case(id, make, out_dtype, FP8_CPU), tol_scale=tol_scale)


def blockwise_act_quant_op(x: Tensor, block_size: int = 128) -> Tuple[Tensor, Tensor]:
    return fp8_blockwise_act_quant(x, block_size)


def blockwise_act_quant_ref(x, block_size=128):
    blocks = x.float().view(*x.shape[:-1], x.shape[-1] // block_size, block_size)
    s = blocks.abs().amax(-1) / E4M3_MAX
    return _fp8_quant(blocks, 1.0 / s[..., None]).view(x.shape), s


# -- MoE expert-parallel permutation ----------------------------------------------------------------------------


def generate_permute_indices_op(tokens_per_expert_group: Tensor, experts_per_rank: int, num_ranks: int,
                                max_len: int, alignment: int) -> Tuple[Tensor, Tensor, Tensor]:
    return generate_permute_indices(tokens_per_expert_group, experts_per_rank, num_ranks, max_len, alignment)


def generate_permute_indices_ref(tokens_per_expert_group, experts_per_rank, num_ranks, max_len, alignment):
    counts = tokens_per_expert_group.tolist()
    starts = [sum(counts[:i]) for i in range(len(counts))]
    per_expert = [sum(counts[r * experts_per_rank + e] for r in range(num_ranks)) for e in range(experts_per_rank)]
    sizes = [-(-max(n, alignment) // alignment) * alignment for n in per_expert]
    out = [-1] * max_len
    write = 0
    for e in range(experts_per_rank):
        pos = write
        for r in range(num_ranks):
            i = r * experts_per_rank + e
            for j in range(counts[i]):
                if pos + j < max_len:
                    out[pos + j] = starts[i] + j
            pos += counts[i]
        write += sizes[e]
    offsets = torch.tensor(sizes).cumsum(0)
    dev = tokens_per_expert_group.device
    return (torch.tensor(out, dtype=torch.int32, device=dev), torch.tensor(sizes, dtype=torch.int32, device=dev),
            offsets.to(dtype=torch.int32, device=dev))


def _permute_counts(r, ranks, experts, high=6):
    return r.randint(high, ranks * experts, dtype=torch.int32)


def _gpi_case(id, ranks=2, experts=3, alignment=8):
    def make(device):
        counts = _permute_counts(Inputs(device), ranks, experts)
        max_len = int(counts.sum()) + experts * alignment
        max_len = -(-max_len // alignment) * alignment
        return (counts, experts, ranks, max_len, alignment)
    return _case(id, make, torch.int32)


def permute_and_pad_op(x: Tensor, num_tokens_per_expert: Tensor, ep_degree: int, num_local_experts: int,
                       alignment: int) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    _input_shape, permuted, indices, sizes, offsets = permute_and_pad(x, num_tokens_per_expert, ep_degree,
                                                                      num_local_experts, alignment)
    return permuted, indices, sizes, offsets


def permute_and_pad_ref(x, num_tokens_per_expert, ep_degree, num_local_experts, alignment):
    max_len = -(-(x.shape[0] + num_local_experts * alignment) // alignment) * alignment
    indices, sizes, offsets = generate_permute_indices_ref(num_tokens_per_expert, num_local_experts, ep_degree,
                                                           max_len, alignment)
    padded = torch.cat([x, x.new_zeros(1, x.shape[-1])])
    return padded[indices.long()], indices, sizes, offsets  # index -1: the appended zero row


def _pad_case(id, dtype=f32, ranks=2, experts=2, alignment=8, hidden=16):
    def make(device):
        r = Inputs(device)
        counts = _permute_counts(r, ranks, experts)
        return (r.randn(int(counts.sum()), hidden, dtype=dtype), counts, ranks, experts, alignment)
    return _case(id, make, dtype)


# ================================================================================================
# The corpus
# ================================================================================================


def _e(name, wrapper, body, reference, cases, **kw):
    return Entry(name, wrapper, body, reference, cases, namespace=NS, **kw)


ENTRIES: List[Entry] = [
    _e("int_matmul", "torchao.kernel.intmm_triton.int_matmul_kernel", int_matmul_op, int_matmul_ref, [
        _intmm_case("int8-32x64x32", 32, 64, 32),
        _intmm_case("int8-odd-48x40x24", 48, 40, 24),
        _intmm_case("int8-strided-b", 32, 64, 48, layout=strided),
    ], notes="tl.make_block_ptr/advance loads with boundary_check, launch options from a triton.Config object "
             "(num_warps=config.num_warps, **config.kwargs), lambda grid"),
    _e("int_scaled_matmul", "torchao.kernel.intmm_triton.int_scaled_matmul_kernel", int_scaled_matmul_op,
       int_scaled_matmul_ref, [
           _intmm_case("int8-f32-scales", 32, 64, 32, scale_dtype=f32),
           # small int8 values: the kernel multiplies the int32 accumulator by an f16 scale in f16 (|acc| < 65504)
           _intmm_case("int8-f16-scales", 48, 32, 40, scale_dtype=f16, high=32),
       ], notes="scales1.expand((M, N)) (a zero-stride view passed with its strides), EVEN_K=(K % 2 == 0) a "
                "Python bool from a size, Config-driven launch options"),
    _e("scaled_int8_mm_cuda", "torchao.prototype.quantized_training.int8_mm.scaled_int8_mm_cuda",
       scaled_int8_mm_cuda_op, scaled_int8_mm_ref, [
           _scaled_mm_case("f32-vector-scales", 32, 64, 48),
           _scaled_mm_case("f16-scalar-col", 16, 32, 32, f16, scalar_col=True),
           _scaled_mm_case("f32-strided-b", 32, 64, 32, layout=strided),
       ], tol_scale=10,
        notes="@triton.autotune (key M, N, K) whose grid lambda reads meta['M'], *A.stride() unpacking, "
              "COL_SCALE_SCALAR=col_scale.numel() == 1"),
    _e("scaled_int8_mm", "torchao.prototype.quantized_training.int8_mm.scaled_int8_mm", scaled_int8_mm_op,
       scaled_int8_mm_ref, [
           _scaled_mm_case("f32-vector-scales", 32, 64, 48),
           _scaled_mm_case("f16-scalar-col", 16, 32, 32, f16, scalar_col=True),
       ], tol_scale=10,
        cpu_skip="the public entry dispatches torch.ops.torchao.scaled_int8_mm, registered for CUDA and Meta only: "
                 "on CPU tensors there is no kernel to dispatch to (NotImplementedError), interpreter or not",
        notes="asserts, then a torch.library op (torchao's own custom op, CUDA impl = scaled_int8_mm_cuda) called "
              "inside the body"),
    _e("hqq_mixed_mm", "torchao.prototype.hqq.mixed_mm.triton_mixed_mm", mixed_mm_op, mixed_mm_ref, [
        _mixed_mm_case("f32-g64", 16, 128, 32, 64),
        _mixed_mm_case("f16-g128", 8, 256, 64, 128, f16),
    ], tol_scale=10,
        notes="@triton.autotune with prune_configs_by over @triton.heuristics (BLOCK_K = min(BLOCK_K, QGROUP_SIZE) "
              "overriding a config value, SPLIT_K), tl.static_assert, a 2-d grid lambda reading META['SPLIT_K'], "
              "acc_dtype=tl.float32 (a tl.dtype) and a str input_precision as constexprs, scales/zeros as transposed "
              "views (stride_k == 1)"),
    _e("hp_to_fp8_row_major", "torchao.prototype.float8nocompile ... hp_to_fp8_row_major", hp_to_fp8_row_major_op,
       hp_to_fp8_row_major_ref, [
           _hp_case("f32-atomic-max", (16, 64)),
           _hp_case("f16-reduction", (8, 96), f16, algo="REDUCTION"),
       ], notes="an Enum argument (KernelAlgorithm) picking atomic-max vs two-pass reduction amax kernels, "
                "torch.finfo(fp8) bounds, a dict dtype -> tl.dtype passed as constexprs, returns a "
                "Float8TrainingTensor subclass (the body takes ._data/._scale)"),
    _e("hp_to_fp8_row_and_col_major", "torchao.prototype.float8nocompile ... hp_to_fp8_row_and_col_major",
       hp_to_fp8_row_and_col_major_op, hp_to_fp8_row_and_col_major_ref, [
           _hp_case("f32", (16, 64)),
           _hp_case("f16-reduction", (32, 48), f16, algo="REDUCTION"),
       ], notes="two fp8 outputs, one allocated column-major (as_strided / t().contiguous().t()), sharing one "
                "scale tensor; two Float8TrainingTensor subclasses"),
    _e("fp8_sdpa_quantize", "torchao.prototype.attention.quantization.triton_fp8_sdpa_quantize", sdpa_quantize_op,
       sdpa_quantize_ref, [
           _qkv_case("f16-mha"),
           _qkv_case("f16-gqa-cross", H=4, Hkv=2, Sq=8, Skv=24),
           _qkv_case("f32-strided-q", dtype=f32, layout=strided),
       ], notes="Optional[int] num_chunks (None reads the GPU's SM count), GQA groups from shapes, partial-max "
                "scratch buffers, phase1 / reduce / phase2 launches for each of q, k, v (nine launches)"),
    _e("fp8_rope_sdpa_quantize", "torchao.prototype.attention.quantization.triton_fp8_rope_sdpa_quantize",
       rope_sdpa_quantize_op, rope_sdpa_quantize_ref, [
           _rope_qkv_case("f16-gqa"),
           _rope_qkv_case("f32-mha", dtype=f32, Hkv=4),
       ], notes="RoPE fused into the quantizer, [B, S, H, D] -> [B, H, S, D] layout change into new allocations, "
                "cos/sin .contiguous(), asserts on shapes"),
    _e("fp8_sdpa_quantize_func", "torchao.prototype.fp8_sdpa_inference.fp8_sdpa_quantize_func",
       fp8_sdpa_quantize_func_op, sdpa_quantize_ref, [
           _qkv_case("f16-same-shape-fused"),
           _qkv_case("f16-cross-separate", Sq=8, Skv=24),
       ], notes="dispatch on q.shape == k.shape (a shape comparison as a guard): one fused qkv kernel set, or "
                "separate q and kv kernel sets"),
    _e("blockwise_act_quant_lhs", "torchao.prototype.blockwise_fp8_training.triton_fp8_blockwise_act_quant_lhs",
       act_quant_lhs_op, act_quant_lhs_ref, [
           _blockwise_case("f32", 16, 256),
           _blockwise_case("f16", 40, 128, f16),
       ], notes="a torch.library.triton_op (the body calls a registered op whose impl launches through "
                "wrap_triton), @triton.autotune, scales allocated col-major via new_empty().as_strided(), "
                "tl.div_rn, float64 amax in the kernel"),
    _e("blockwise_weight_quant_rhs",
       "torchao.prototype.blockwise_fp8_training.triton_fp8_blockwise_weight_quant_rhs", weight_quant_rhs_op,
       weight_quant_rhs_ref, [
           _blockwise_case("f32", 128, 256),
           _blockwise_case("f16", 256, 128, f16),
       ], notes="triton_op + wrap_triton, 128x128 tiles, column-major outputs"),
    _e("fp8_gemm_1x128_128x128", "torchao.prototype.blockwise_fp8_training.triton_fp8_gemm_1x128_128x128",
       fp8_gemm_op, fp8_gemm_ref, [
           # Hopper's fp8 MMA accumulates each 128-wide block in fewer bits than the fp32 reference: ~1e-2 absolute
           # on outputs of ~16 (the f16 output's own rounding is of that size).
           _fp8_gemm_case("f32-out", 16, 256, 128, tol_scale=5),
           _fp8_gemm_case("f16-out", 32, 128, 256, f16),
       ], tol_scale=20,
        notes="triton_op with fp8 inputs, asserts on row-/column-major layouts (stride checks), @triton.autotune, "
              "torch.dtype out_dtype argument"),
    _e("fp8_blockwise_act_quant", "torchao.kernel.blockwise_quantization.fp8_blockwise_act_quant",
       blockwise_act_quant_op, blockwise_act_quant_ref, [
           _blockwise_case("f32", 4, 256),
           _blockwise_case("f16", 8, 128, f16),
       ], cpu_skip=NO_TRITON, trace_needs_gpu=NO_TRITON,
        notes="_get_triton_impls(): kernels built lazily under a lock and cached in a module global, only when "
              "has_triton(); @triton.autotune on the built kernels"),
    _e("generate_permute_indices", "torchao.prototype.moe_training.ep.kernels.generate_permute_indices",
       generate_permute_indices_op, generate_permute_indices_ref, [
           _gpi_case("2-ranks-3-experts"),
           _gpi_case("4-ranks-2-experts-align16", ranks=4, experts=2, alignment=16),
       ], notes="torch.cumsum/clamp_min/view(...).sum(0) on the counts before the launch, a triton_op "
                "(fill_indices_wrapper: torch.full(-1), wrap_triton launch, grid = min(experts, max_blocks)) "
                "called from the body"),
    _e("permute_and_pad", "torchao.prototype.moe_training.ep.permute.permute_and_pad", permute_and_pad_op,
       permute_and_pad_ref, [
           _pad_case("f32"),
           _pad_case("f16-4-ranks", f16, ranks=4, experts=2, alignment=16),
       ], notes="torch.no_grad(), generate_permute_indices, torch.vstack with a new_zeros row, x[permuted_indices] "
                "(an index gather whose output size is max_len, not data-dependent); returns a torch.Size too "
                "(dropped)"),
]

BY_NAME = {e.name: e for e in ENTRIES}
