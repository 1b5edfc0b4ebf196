"""Real host wrappers of conch (Stack AV's Triton kernels for vLLM-style inference), called unchanged from
torch_tile op bodies.

Library: conch-triton-kernels==1.3 (module ``conch``), pure Python: ``pip install --no-deps
conch-triton-kernels==1.3``. The module is skipped without it (``pytest.importorskip``).

Each entry calls ``conch.ops.*`` exactly as a conch user does (the public functions, which build their outputs and
call the kernel launchers), or the launcher itself where conch's op is only a thin allocation around it. conch's
in-place ops (``fused_add_rms_norm``, ``gemma_rms_norm`` without residual, ``rotary_embedding``,
``reshape_and_cache``, ``copy_blocks``) write their arguments: their entries run them on clones made in the body
(one entry, ``fused_add_rms_norm_inplace``, keeps the in-place call with ``mutates_args`` and the returned inputs).
conch's launchers assert contiguous inputs, so no case here is strided.
References are plain torch, written from the kernels' documented semantics (not conch's own reference module).
"""

import math
from typing import List, Optional, Tuple

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("conch", reason="needs conch-triton-kernels==1.3 (pip install --no-deps conch-triton-kernels==1.3)")

from conch.kernels.normalization.rms_norm import rms_norm_launcher  # noqa: E402
from conch.ops.activation.gelu_tanh_and_mul import gelu_tanh_and_mul  # noqa: E402
from conch.ops.activation.silu_and_mul import silu_and_mul  # noqa: E402
from conch.ops.attention.paged_attention import paged_attention  # noqa: E402
from conch.ops.attention.varlen_attention import varlen_attention  # noqa: E402
from conch.ops.embedding.rotary_embedding import rotary_embedding  # noqa: E402
from conch.ops.normalization.gemma_rms_norm import gemma_rms_norm  # noqa: E402
from conch.ops.normalization.rms_norm import fused_add_rms_norm, rms_norm  # noqa: E402
from conch.ops.quantization.bitsandbytes.functional import dequantize_4bit, quantize_4bit  # noqa: E402
from conch.ops.quantization.fp8 import scaled_fp8_quant  # noqa: E402
from conch.ops.quantization.gemm import scaled_gemm  # noqa: E402
from conch.ops.quantization.int8 import scaled_int8_quant  # noqa: E402
from conch.ops.vision.bev_pool import bev_pool, bev_pool_backward  # noqa: E402
from conch.ops.vision.nms import nms  # noqa: E402
from conch.ops.vllm.copy_blocks import copy_blocks  # noqa: E402
from conch.ops.vllm.reshape_and_cache import reshape_and_cache  # noqa: E402

from wrapper_corpus import Case, Entry, Inputs, Tensor, bf16, f16, f32  # noqa: E402

NS = "conch"

BF16_CPU = "bf16: Triton's interpreter computes bf16 wrongly (torch_tile refuses it on CPU)"
FP8_CPU = "fp8 output: numpy has no fp8, Triton's interpreter computes it wrongly (torch_tile refuses it on CPU)"
LIBDEVICE = ("Triton's interpreter does not implement triton.language.extra.libdevice (libdevice.{} returns None "
             "under TRITON_INTERPRET=1 too); CUDA only")


def _case(id, make, dtype=f32, gpu_only=""):
    return Case(id, make, dtype, gpu_only or (BF16_CPU if dtype == bf16 else ""))


def _rms(x, eps):
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


# -- activations ----------------------------------------------------------------------------------------------


def silu_and_mul_op(x: Tensor) -> Tensor:
    return silu_and_mul(x)


def gelu_tanh_and_mul_op(x: Tensor) -> Tensor:
    return gelu_tanh_and_mul(x)


def _glu_ref(act):
    def ref(x):
        d = x.shape[-1] // 2
        xf = x.float()
        return (act(xf[..., :d]) * xf[..., d:]).to(x.dtype)
    return ref


def _one(id, shape, dtype=f32, layout=None, scale=1.0):
    def make(device):
        x = Inputs(device).randn(*shape, dtype=dtype, scale=scale)
        return (layout(x) if layout else x,)
    return _case(id, make, dtype)


# -- norms ----------------------------------------------------------------------------------------------------


def rms_norm_op(x: Tensor, weight: Tensor, epsilon: float) -> Tensor:
    return rms_norm(x, weight, epsilon)


def rms_norm_ref(x, weight, epsilon):
    return (_rms(x, epsilon) * weight.float()).to(x.dtype)


def rms_norm_launcher_op(x: Tensor, weight: Tensor, epsilon: float) -> Tensor:
    output = torch.empty_like(x)  # the launcher writes a caller-made output, as conch.ops.rms_norm does
    rms_norm_launcher(output, x, weight, epsilon)
    return output


def _norm_case(id, shape, dtype=f32):
    def make(device):
        r = Inputs(device)
        return (r.randn(*shape, dtype=dtype), r.randn(shape[-1], dtype=dtype), 1e-6)
    return _case(id, make, dtype)


def fused_add_rms_norm_op(x: Tensor, residual: Tensor, weight: Tensor, epsilon: float) -> Tuple[Tensor, Tensor]:
    x, residual = x.clone(), residual.clone()  # conch's op works in place: run it on copies
    out, res = fused_add_rms_norm(x, residual, weight, epsilon)
    return out, res


def fused_add_rms_norm_inplace_op(x: Tensor, residual: Tensor, weight: Tensor,
                                  epsilon: float) -> Tuple[Tensor, Tensor]:
    return fused_add_rms_norm(x, residual, weight, epsilon)  # as vLLM calls it: returns its (written) inputs


def fused_add_rms_norm_ref(x, residual, weight, epsilon):
    s = x.float() + residual.float()
    return (_rms(s, epsilon) * weight.float()).to(x.dtype), s.to(x.dtype)


def _fused_add_case(id, shape, dtype=f32):
    def make(device):
        r = Inputs(device)
        return (r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype), r.randn(shape[-1], dtype=dtype), 1e-6)
    return _case(id, make, dtype)


def gemma_rms_norm_op(x: Tensor, weight: Tensor, variance_epsilon: float) -> Tensor:
    return gemma_rms_norm(x.clone(), weight, variance_epsilon)  # in place without a residual: on a copy


def gemma_rms_norm_ref(x, weight, variance_epsilon):
    return (_rms(x, variance_epsilon) * (1.0 + weight.float())).to(x.dtype)


def gemma_rms_norm_residual_op(x: Tensor, weight: Tensor, variance_epsilon: float,
                               residual: Tensor) -> Tuple[Tensor, Tensor]:
    out, res = gemma_rms_norm(x, weight, variance_epsilon, residual)  # x + residual is a new tensor: no copy needed
    return out, res


def gemma_rms_norm_residual_ref(x, weight, variance_epsilon, residual):
    out = gemma_rms_norm_ref(x + residual, weight, variance_epsilon)
    return out, out  # conch returns (x, residual) with residual = x: the same, normalized, tensor twice


def _gemma_case(id, shape, dtype=f32, residual=False):
    def make(device):
        r = Inputs(device)
        args = (r.randn(*shape, dtype=dtype), r.randn(shape[-1], dtype=dtype, scale=0.5), 1e-6)
        return args + (r.randn(*shape, dtype=dtype),) if residual else args
    return _case(id, make, dtype)


# -- rotary embedding ------------------------------------------------------------------------------------------


def rotary_embedding_op(positions: Tensor, query: Tensor, key: Tensor, head_size: int,
                        cos_sin_cache: Tensor) -> Tuple[Tensor, Tensor]:
    q, k = rotary_embedding(positions, query.clone(), key.clone(), head_size, cos_sin_cache, is_neox=True)
    return q, k


def _neox(x, cos, sin, head_size):
    n = x.shape[0]
    x = x.float().view(n, -1, head_size)
    rot = cos.shape[-1] * 2
    x1, x2, rest = x[..., :rot // 2], x[..., rot // 2:rot], x[..., rot:]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, rest], -1).view(n, -1)


def rotary_embedding_ref(positions, query, key, head_size, cos_sin_cache):
    cs = cos_sin_cache.float()[positions.long()]
    cos, sin = cs.chunk(2, dim=-1)
    return _neox(query, cos, sin, head_size).to(query.dtype), _neox(key, cos, sin, head_size).to(key.dtype)


def _rope_case(id, dtype=f32, tokens=5, heads=4, kv_heads=2, head_size=16, rot=16, max_pos=32):
    def make(device):
        r = Inputs(device)
        positions = r.randint(max_pos, tokens)
        q = r.randn(tokens, heads * head_size, dtype=dtype)
        k = r.randn(tokens, kv_heads * head_size, dtype=dtype)
        inv = 1.0 / (10000 ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot))
        freqs = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv)
        cache = torch.cat([freqs.cos(), freqs.sin()], -1).to(dtype=dtype, device=device)
        return (positions, q, k, head_size, cache)
    return _case(id, make, dtype)


# -- quantization ---------------------------------------------------------------------------------------------


def scaled_int8_quant_op(input_tensor: Tensor, scale: Tensor) -> Tensor:
    out, _scale = scaled_int8_quant(input_tensor, scale)
    return out


def scaled_int8_quant_ref(input_tensor, scale):
    return (input_tensor.float() / scale.float()).clamp(-128, 127).trunc().to(torch.int8)  # .to(tl.int8) truncates


def scaled_fp8_quant_op(input_tensor: Tensor, scale: Tensor) -> Tensor:
    out, _scale = scaled_fp8_quant(input_tensor, scale)
    return out


def scaled_fp8_quant_ref(input_tensor, scale):
    fmax = torch.finfo(torch.float8_e4m3fn).max
    return (input_tensor.float() / scale.float()).clamp(-fmax, fmax).to(torch.float8_e4m3fn)


def _quant_case(id, shape, dtype=f32, scale=0.02, gpu_only=""):
    def make(device):
        r = Inputs(device)
        return (r.randn(*shape, dtype=dtype), torch.tensor([scale], dtype=torch.float32, device=device))
    return _case(id, make, dtype, gpu_only)


def scaled_gemm_op(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, output_dtype: torch.dtype,
                   bias: Optional[Tensor] = None) -> Tensor:
    return scaled_gemm(a, b, scale_a, scale_b, output_dtype, bias)


def scaled_gemm_ref(a, b, scale_a, scale_b, output_dtype, bias=None):
    c = (a.double() @ b.double()) * scale_a.double().view(-1, 1) * scale_b.double().view(1, -1)
    if bias is not None:
        c = c + bias.double()
    return c.to(output_dtype)


def _gemm_case(id, M, K, N, output_dtype, bias=False, per_tensor=False):
    def make(device):
        r = Inputs(device)
        # |a @ b| < 2^15: the kernel converts its int32 accumulator to the output dtype before scaling, and
        # f16 overflows past 65504 (the library's own result would be inf where the reference is not).
        a = r.randint(32, M, K, dtype=torch.int32).sub(16).to(torch.int8)
        b = r.randint(32, K, N, dtype=torch.int32).sub(16).to(torch.int8)
        sa = r.rand(1, 1) * 0.01 if per_tensor else r.rand(M, 1) * 0.01
        sb = r.rand(1, 1) * 0.01 if per_tensor else r.rand(N, 1) * 0.01
        bias_t = r.randn(N, dtype=output_dtype) if bias else None
        return (a, b, sa.to(output_dtype), sb.to(output_dtype), output_dtype, bias_t)
    return _case(id, make, output_dtype)


_NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
        -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
        0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]


def nf4_roundtrip_op(x: Tensor, blocksize: int, quant_type: str) -> Tuple[Tensor, Tensor, Tensor]:
    packed, state = quantize_4bit(x, blocksize=blocksize, quant_type=quant_type)
    deq = dequantize_4bit(packed, state, blocksize=blocksize, quant_type=quant_type)
    return packed, state.absmax, deq


def nf4_roundtrip_ref(x, blocksize, quant_type):
    table = torch.tensor(_NF4, dtype=torch.float32, device=x.device)
    flat = x.float().reshape(-1, blocksize)
    absmax = flat.abs().amax(-1)
    idx = ((flat / absmax[:, None])[..., None] - table).abs().argmin(-1)
    codes = idx.reshape(-1).to(torch.uint8)
    packed = (codes[0::2] << 4) | codes[1::2]
    deq = (table[idx] * absmax[:, None]).reshape(x.shape).to(x.dtype)
    return packed.view(-1, 1), absmax, deq


def _nf4_case(id, shape, blocksize, dtype=f32):
    def make(device):
        return (Inputs(device).randn(*shape, dtype=dtype), blocksize, "nf4")
    return _case(id, make, dtype)


# -- attention ------------------------------------------------------------------------------------------------
# Cache blocks of 16 tokens (vLLM's default): the kernels tl.dot over a block, which compiles for the GPU only with
# every dimension >= 16 (Triton's interpreter takes any).


def paged_attention_op(query: Tensor, key_cache: Tensor, value_cache: Tensor, block_table: Tensor,
                       seq_lens: Tensor, scale: Optional[float] = None, softcap: float = 0.0) -> Tensor:
    return paged_attention(query, key_cache, value_cache, block_table, seq_lens, scale=scale, softcap=softcap)


def _gather_kv(cache, blocks, n):
    # cache: (num_blocks, block_size, kv_heads, head_size) -> (n, kv_heads, head_size)
    return cache[blocks.long()].flatten(0, 1)[:n].float()


def _attend(q, k, v, scale, softcap=0.0, causal_offset=None):
    # q: (Lq, H, D), k/v: (Lk, Hkv, D)
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.float(), k) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    if causal_offset is not None:
        lq, lk = q.shape[0], k.shape[0]
        allowed = torch.arange(lk)[None, :] <= (torch.arange(lq)[:, None] + causal_offset)
        s = s.masked_fill(~allowed.to(s.device), float("-inf"))
    return torch.einsum("hqk,khd->qhd", s.softmax(-1), v)


def paged_attention_ref(query, key_cache, value_cache, block_table, seq_lens, scale=None, softcap=0.0):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    out = torch.empty_like(query, dtype=torch.float32)
    for b in range(query.shape[0]):
        n = int(seq_lens[b])
        k = _gather_kv(key_cache, block_table[b], n)
        v = _gather_kv(value_cache, block_table[b], n)
        out[b] = _attend(query[b:b + 1], k, v, scale, softcap)[0]
    return out.to(query.dtype)


def _kv_cache(r, num_blocks, block_size, kv_heads, head_size, dtype):
    return (r.randn(num_blocks, block_size, kv_heads, head_size, dtype=dtype),
            r.randn(num_blocks, block_size, kv_heads, head_size, dtype=dtype))


def _paged_case(id, dtype=f32, seq_lens=(29, 7), heads=4, kv_heads=2, head_size=16, block_size=16, scale=None,
                softcap=0.0):
    def make(device):
        r = Inputs(device)
        batch, max_blocks = len(seq_lens), max(math.ceil(n / block_size) for n in seq_lens)
        kc, vc = _kv_cache(r, batch * max_blocks + 1, block_size, kv_heads, head_size, dtype)
        table = torch.randperm(batch * max_blocks + 1, generator=r.g)[:batch * max_blocks].view(batch, max_blocks)
        q = r.randn(batch, heads, head_size, dtype=dtype)
        lens = torch.tensor(seq_lens, dtype=torch.int32, device=device)
        return (q, kc, vc, table.to(dtype=torch.int32, device=device), lens, scale, softcap)
    return _case(id, make, dtype)


def varlen_attention_op(query: Tensor, key_cache: Tensor, value_cache: Tensor, cu_seqlens_q: Tensor,
                        max_seqlen_q: int, seq_lens: Tensor, max_seqlen_k: int, block_table: Tensor,
                        causal: bool = False, scale: Optional[float] = None) -> Tensor:
    return varlen_attention(query, key_cache, value_cache, cu_seqlens_q, max_seqlen_q, seq_lens, max_seqlen_k,
                            block_table, causal=causal, scale=scale)


def varlen_attention_ref(query, key_cache, value_cache, cu_seqlens_q, max_seqlen_q, seq_lens, max_seqlen_k,
                         block_table, causal=False, scale=None):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    out = torch.empty_like(query, dtype=torch.float32)
    for b in range(seq_lens.shape[0]):
        q0, q1 = int(cu_seqlens_q[b]), int(cu_seqlens_q[b + 1])
        n = int(seq_lens[b])
        k = _gather_kv(key_cache, block_table[b], n)
        v = _gather_kv(value_cache, block_table[b], n)
        out[q0:q1] = _attend(query[q0:q1], k, v, scale, causal_offset=(n - (q1 - q0)) if causal else None)
    return out.to(query.dtype)


def _varlen_case(id, dtype=f32, q_lens=(5, 3), k_lens=(5, 21), heads=4, kv_heads=2, head_size=16, block_size=16,
                 causal=False):
    def make(device):
        r = Inputs(device)
        batch, max_blocks = len(k_lens), max(math.ceil(n / block_size) for n in k_lens)
        kc, vc = _kv_cache(r, batch * max_blocks, block_size, kv_heads, head_size, dtype)
        table = torch.randperm(batch * max_blocks, generator=r.g).view(batch, max_blocks)
        q = r.randn(sum(q_lens), heads, head_size, dtype=dtype)
        cu = torch.tensor([0, *torch.tensor(q_lens).cumsum(0).tolist()], dtype=torch.int32, device=device)
        lens = torch.tensor(k_lens, dtype=torch.int32, device=device)
        return (q, kc, vc, cu, max(q_lens), lens, max(k_lens), table.to(dtype=torch.int32, device=device), causal)
    return _case(id, make, dtype)


# -- KV cache ops -------------------------------------------------------------------------------------------


def reshape_and_cache_op(key: Tensor, value: Tensor, key_cache: Tensor, value_cache: Tensor,
                         slot_mapping: Tensor) -> Tuple[Tensor, Tensor]:
    key_cache, value_cache = key_cache.clone(), value_cache.clone()  # the op writes the caches: on copies
    reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, "auto")
    return key_cache, value_cache


def reshape_and_cache_ref(key, value, key_cache, value_cache, slot_mapping):
    kc, vc = key_cache.clone(), value_cache.clone()
    bs = kc.shape[1]
    for t, slot in enumerate(slot_mapping.tolist()):
        kc[slot // bs, slot % bs] = key[t]
        vc[slot // bs, slot % bs] = value[t]
    return kc, vc


def _cache_case(id, dtype=f32, tokens=6, blocks=4, block_size=4, kv_heads=2, head_size=16):
    def make(device):
        r = Inputs(device)
        kc, vc = _kv_cache(r, blocks, block_size, kv_heads, head_size, dtype)
        slots = torch.randperm(blocks * block_size, generator=r.g)[:tokens].to(device)
        return (r.randn(tokens, kv_heads, head_size, dtype=dtype), r.randn(tokens, kv_heads, head_size, dtype=dtype),
                kc, vc, slots)
    return _case(id, make, dtype)


def copy_blocks_op(key_caches: List[Tensor], value_caches: List[Tensor], block_mapping: Tensor) -> List[Tensor]:
    key_caches = [c.clone() for c in key_caches]
    value_caches = [c.clone() for c in value_caches]
    copy_blocks(key_caches, value_caches, block_mapping)
    return key_caches + value_caches


def copy_blocks_ref(key_caches, value_caches, block_mapping):
    outs = [c.clone() for c in key_caches + value_caches]
    for src, dst in block_mapping.tolist():
        for c in outs:
            c[dst] = c[src]
    return outs


def _copy_case(id, dtype=f32, layers=2, blocks=6, block_size=4, kv_heads=2, head_size=8):
    def make(device):
        r = Inputs(device)
        kcs = [r.randn(blocks, block_size * kv_heads * head_size, dtype=dtype) for _ in range(layers)]
        vcs = [r.randn(blocks, block_size * kv_heads * head_size, dtype=dtype) for _ in range(layers)]
        mapping = torch.tensor([[0, 3], [2, 5]], dtype=torch.int64, device=device)
        return (kcs, vcs, mapping)
    return _case(id, make, dtype)


# -- vision ---------------------------------------------------------------------------------------------------


def nms_op(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    return nms(boxes, scores, iou_threshold)


def nms_ref(boxes, scores, iou_threshold):
    order = torch.sort(scores, stable=True, descending=True).indices.tolist()
    b = boxes.double()
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    keep = []
    for i in order:
        ok = True
        for j in keep:
            w = (torch.minimum(b[i, 2], b[j, 2]) - torch.maximum(b[i, 0], b[j, 0])).clamp(min=0)
            h = (torch.minimum(b[i, 3], b[j, 3]) - torch.maximum(b[i, 1], b[j, 1])).clamp(min=0)
            inter = w * h
            if inter / (area[i] + area[j] - inter) > iou_threshold:
                ok = False
                break
        if ok:
            keep.append(i)
    return torch.tensor(keep, dtype=torch.int64, device=boxes.device)


def _nms_case(id, n, dtype=f32, threshold=0.3):
    def make(device):
        r = Inputs(device)
        xy = r.rand(n, 2) * 10
        wh = r.rand(n, 2) * 4 + 1
        boxes = torch.cat([xy, xy + wh], -1).to(dtype)
        return (boxes, r.rand(n).to(dtype), threshold)
    return _case(id, make, dtype)


def bev_pool_op(image_feats: Tensor, geom_feats: Tensor, interval_starts: Tensor, interval_lengths: Tensor,
                batch_size: int, grid_cells_z: int, grid_cells_x: int, grid_cells_y: int) -> Tensor:
    return bev_pool(image_feats, geom_feats, interval_starts, interval_lengths, batch_size, grid_cells_z,
                    grid_cells_x, grid_cells_y)


def bev_pool_ref(image_feats, geom_feats, interval_starts, interval_lengths, batch_size, gz, gx, gy):
    out = torch.zeros(batch_size, gz, gx, gy, image_feats.shape[1], dtype=torch.float32, device=image_feats.device)
    for s, n in zip(interval_starts.tolist(), interval_lengths.tolist()):
        x, y, z, b = geom_feats[s].tolist()
        out[b, z, x, y] = image_feats[s:s + n].float().sum(0)
    return out.to(image_feats.dtype)


def bev_pool_backward_op(grad_output: Tensor, geom_feats: Tensor, interval_starts: Tensor,
                         interval_lengths: Tensor) -> Tensor:
    return bev_pool_backward(grad_output, geom_feats, interval_starts, interval_lengths)


def bev_pool_backward_ref(grad_output, geom_feats, interval_starts, interval_lengths):
    grad = torch.zeros(geom_feats.shape[0], grad_output.shape[-1], dtype=torch.float32, device=grad_output.device)
    for s, n in zip(interval_starts.tolist(), interval_lengths.tolist()):
        x, y, z, b = geom_feats[s].tolist()
        grad[s:s + n] = grad_output[b, z, x, y].float()
    return grad.to(grad_output.dtype)


def _bev_geometry(r, batch, gz, gx, gy, intervals):
    cells = torch.randperm(batch * gz * gx * gy, generator=r.g)[:intervals]
    lengths = torch.randint(1, 4, (intervals,), generator=r.g)
    starts = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)[:-1]])
    b, rest = cells // (gz * gx * gy), cells % (gz * gx * gy)
    z, rest = rest // (gx * gy), rest % (gx * gy)
    x, y = rest // gy, rest % gy
    per_interval = torch.stack([x, y, z, b], -1)
    geom = per_interval.repeat_interleave(lengths, dim=0)
    return geom.to(torch.int32), starts.to(torch.int32), lengths.to(torch.int32), int(lengths.sum())


def _bev_case(id, dtype=f32, batch=2, gz=1, gx=4, gy=5, intervals=9, channels=12):
    def make(device):
        r = Inputs(device)
        geom, starts, lengths, n = _bev_geometry(r, batch, gz, gx, gy, intervals)
        feats = r.randn(n, channels, dtype=dtype)
        return (feats, geom.to(device), starts.to(device), lengths.to(device), batch, gz, gx, gy)
    return _case(id, make, dtype)


def _bev_backward_case(id, dtype=f32, batch=2, gz=1, gx=4, gy=5, intervals=9, channels=12):
    def make(device):
        r = Inputs(device)
        geom, starts, lengths, n = _bev_geometry(r, batch, gz, gx, gy, intervals)
        grad = r.randn(batch, gz, gx, gy, channels, dtype=dtype)
        return (grad, geom.to(device), starts.to(device), lengths.to(device))
    return _case(id, make, dtype)


# ================================================================================================
# The corpus
# ================================================================================================


def _e(name, wrapper, body, reference, cases, **kw):
    return Entry(name, wrapper, body, reference, cases, namespace=NS, **kw)


ENTRIES: List[Entry] = [
    _e("silu_and_mul", "conch.ops.activation.silu_and_mul", silu_and_mul_op, _glu_ref(F.silu), [
        _one("f32-2d", (6, 64)),
        _one("f16-3d", (2, 3, 80), f16),
        _one("bf16", (4, 64), bf16),
    ], notes="output_shape = x.shape[:-1] + (d,) (torch.Size arithmetic), torch.empty(shape, dtype=, device=), "
             "launcher over x.numel() // x.shape[-1] rows"),
    _e("gelu_tanh_and_mul", "conch.ops.activation.gelu_tanh_and_mul", gelu_tanh_and_mul_op,
       _glu_ref(lambda t: F.gelu(t, approximate="tanh")), [
           _one("f32", (6, 64)),
           _one("f32-3d", (2, 3, 80)),  # libdevice's tanh takes fp32/fp64 only: the library's own f16 call fails
       ], cpu_skip=LIBDEVICE.format("tanh"), notes="as silu_and_mul; the kernel calls libdevice.tanh"),
    _e("rms_norm", "conch.ops.normalization.rms_norm", rms_norm_op, rms_norm_ref, [
        _norm_case("f32", (5, 64)),
        _norm_case("f16-3d", (2, 3, 96), f16),
        _norm_case("bf16", (4, 128), bf16),
    ], notes="torch.empty_like(x, dtype=, device=), asserts on strides and is_contiguous(), None for a pointer "
             "(residual_ptr), kernel arguments passed by keyword, float epsilon"),
    _e("rms_norm_launcher", "conch.kernels.normalization.rms_norm.rms_norm_launcher", rms_norm_launcher_op,
       rms_norm_ref, [
           _norm_case("f32", (7, 48)),
           _norm_case("f16", (3, 200), f16),
       ], notes="the plain launcher writing a body-made output (the op above without its allocation)"),
    _e("fused_add_rms_norm", "conch.ops.normalization.fused_add_rms_norm", fused_add_rms_norm_op,
       fused_add_rms_norm_ref, [
           _fused_add_case("f32", (5, 64)),
           _fused_add_case("f16-3d", (2, 3, 96), f16),
       ], tol_scale=2, notes="works in place on clones made in the body, returns the clones (x, residual)"),
    _e("fused_add_rms_norm_inplace", "conch.ops.normalization.fused_add_rms_norm", fused_add_rms_norm_inplace_op,
       fused_add_rms_norm_ref, [
           _fused_add_case("f32", (5, 64)),
           _fused_add_case("f16", (3, 80), f16),
       ], mutates_args=("x", "residual"), tol_scale=2,
        notes="vLLM's calling convention: writes x and residual in place and returns them (the op returns its "
              "inputs themselves, as the wrapper does)"),
    _e("gemma_rms_norm", "conch.ops.normalization.gemma_rms_norm", gemma_rms_norm_op, gemma_rms_norm_ref, [
        _gemma_case("f32", (5, 64)),
        _gemma_case("f16", (3, 100), f16),
    ], notes="in place on a clone; raises ValueError on rank != 2 (a guard on x.shape)"),
    _e("gemma_rms_norm_residual", "conch.ops.normalization.gemma_rms_norm", gemma_rms_norm_residual_op,
       gemma_rms_norm_residual_ref, [
           _gemma_case("f32", (5, 64), residual=True),
           _gemma_case("f16", (3, 100), f16, residual=True),
       ],
        notes="Optional residual: x = x + residual (an ATen op) then the in-place kernel on that new tensor; "
                "returns (x, residual) where residual is the same tensor as the written x (two outputs, one tensor)"),
    _e("rotary_embedding", "conch.ops.embedding.rotary_embedding", rotary_embedding_op, rotary_embedding_ref, [
        _rope_case("f32"),
        _rope_case("f16-partial-rot", f16, rot=8),
        _rope_case("f32-mha", kv_heads=4, head_size=32, rot=32),
    ], tol_scale=2, notes="in place on clones; int64 positions index the cos/sin cache in the kernel; keyword-only "
                          "is_neox, shape/stride arithmetic with negative indices"),
    _e("scaled_int8_quant", "conch.ops.quantization.scaled_int8_quant", scaled_int8_quant_op, scaled_int8_quant_ref, [
        _quant_case("f32", (6, 64)),
        _quant_case("f16", (5, 100), f16),
    ], notes="torch.zeros_like(x, dtype=int8), torch.iinfo bounds as int arguments, a 1-element scale tensor, "
             "assert scale.numel() == 1"),
    _e("scaled_fp8_quant", "conch.ops.quantization.scaled_fp8_quant", scaled_fp8_quant_op, scaled_fp8_quant_ref, [
        _quant_case("f32", (6, 64), gpu_only=FP8_CPU),
        _quant_case("f16", (3, 100), f16, gpu_only=FP8_CPU),
    ], notes="fp8 output dtype chosen by current_platform.is_amd() (module state), torch.finfo(fp8) bounds"),
    _e("scaled_gemm", "conch.ops.quantization.scaled_gemm", scaled_gemm_op, scaled_gemm_ref, [
        _gemm_case("int8-f32-out", 16, 64, 64, f32),
        _gemm_case("int8-f16-out-bias", 8, 128, 64, f16, bias=True),
        _gemm_case("int8-per-tensor", 20, 64, 128, f32, per_tensor=True),
    ], tol_scale=10,  # K and N multiples of the kernel's 64-wide blocks: it loads B unmasked
        cpu_skip="the kernel loads its zero point from torch.tensor([[]]) (an empty tensor) when "
                 "cxpr_zero_is_scalar: Triton's interpreter dereferences that empty buffer and segfaults (also "
                 "under TRITON_INTERPRET=1); CUDA only",
        notes="a metadata dataclass (enums, dtypes) built from shapes, tuned block sizes from module state, "
              "output.add_(bias) after the launch, torch.dtype op argument"),
    _e("nf4_roundtrip", "conch.ops.quantization.bitsandbytes quantize_4bit + dequantize_4bit", nf4_roundtrip_op,
       nf4_roundtrip_ref, [
           _nf4_case("f32-bs64", (256,), 64),  # 1-d: dequantize_blockwise asserts out.shape == (numel,)
           _nf4_case("f16-bs128", (384,), 128, f16),
       ], notes="str quant_type -> an enum constexpr, blocksize checked against a list, a QuantState dataclass "
                "between the two wrappers, triton.cdiv on sizes, torch.Size outputs"),
    _e("paged_attention", "conch.ops.attention.paged_attention", paged_attention_op, paged_attention_ref, [
        _paged_case("f32"),
        _paged_case("f16", f16),
        _paged_case("f32-scale", scale=0.2),
        _case("f32-softcap", _paged_case("", scale=0.2, softcap=5.0).make, f32, LIBDEVICE.format("tanh")),
    ], tol_scale=10,
        notes="two kernels (splits, then reduce), scratch allocations sized from shapes, Optional[float] scale, "
              "softcap > 0.0 as a constexpr, size checks raising ValueError, module-level platform state, "
              "libdevice.tanh only under the softcap constexpr"),
    _e("varlen_attention", "conch.ops.attention.varlen_attention", varlen_attention_op, varlen_attention_ref, [
        _varlen_case("f32"),
        _varlen_case("f16", f16),
        _varlen_case("f32-causal-prefill", q_lens=(6, 4), k_lens=(6, 4), causal=True),
    ], tol_scale=10,
        notes="int max_seqlen_q/k arguments, a split-kv heuristic, current_platform.get_device_name() "
              "(torch.cuda query) deciding a constexpr, two kernels"),
    _e("reshape_and_cache", "conch.ops.vllm.reshape_and_cache", reshape_and_cache_op, reshape_and_cache_ref, [
        _cache_case("f32"),
        _cache_case("f16", f16),
    ], notes="writes the caches (clones here), str kv_cache_dtype -> constexpr, None scale pointers, int64 "
             "strides"),
    _e("copy_blocks", "conch.ops.vllm.copy_blocks", copy_blocks_op, copy_blocks_ref, [
        _copy_case("f32"),
        _copy_case("f16", f16),
    ], notes="list[Tensor] arguments; the launcher builds torch.tensor([t.data_ptr() for t in caches], "
             "dtype=uint64) (addresses of tensors the body makes, read per call) and the kernel dereferences those "
             "raw addresses; a dtype -> tl.dtype constexpr map"),
    _e("nms", "conch.ops.vision.nms", nms_op, nms_ref, [
        _nms_case("f32-40", 40),
        _nms_case("f32-100-loose", 100, threshold=0.6),
    ], trace_runs_body="the trace learns the size of sorted_indices[keep_mask] from one run of the body",
        notes="@triton.autotune on both kernels, torch.sort + fancy indexing before the launch, a (1,) grid, and "
             "returns sorted_indices[keep_mask] (a boolean mask: data-dependent output size)"),
    _e("bev_pool", "conch.ops.vision.bev_pool", bev_pool_op, bev_pool_ref, [
        _bev_case("f32"),
        _bev_case("f16", f16),
        _bev_case("f32-3d-grid", gz=2, gx=3, gy=3, intervals=12, channels=40),
    ], notes="int op arguments sizing a 5-d torch.zeros output, a lambda grid over a constexpr block size, "
             "a device-side loop bounded by tl.max of loaded data"),
    _e("bev_pool_backward", "conch.ops.vision.bev_pool_backward", bev_pool_backward_op, bev_pool_backward_ref, [
        _bev_backward_case("f32"),
        _bev_backward_case("f16", f16),
    ], notes="the backward wrapper: output sized by geom_feats.shape[0], lambda grid"),
]

BY_NAME = {e.name: e for e in ENTRIES}
