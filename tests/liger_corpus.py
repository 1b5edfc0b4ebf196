"""A corpus of real host wrappers, called unchanged from torch_tile op bodies.

Each entry is one torch_tile op whose body calls a Liger-Kernel (0.8.5) forward
wrapper exactly as Liger's own ``autograd.Function.forward`` calls it (or, where
the Function's forward holds the host code itself, calls that forward with a
stand-in ``ctx``), with the wrapper's non-tensor parameters as typed op
arguments; a few more entries do the same with the wrappers of Triton's
tutorials (tests/triton_tutorials.py). Nothing in the libraries is changed or
special-cased: the point is what a tracer must handle to take real code.

An entry gives the body, the cases (small seeded inputs: several dtypes,
non-contiguous layouts where the wrapper calls ``.contiguous()``/``.view``) and
an independent torch reference. The library's own result is the body run
eagerly (that is, the wrapper called directly); tests/test_real_wrappers.py
compares the op, the library and the reference.

An entry (or one case of it) that torch_tile must refuse says so: ``refused``
names the error and a regex on its message (the mechanism), and
``refused_because`` says in one line why refusing is right; the tests then
assert that refusal, and still check the library against the reference.

Ops are registered lazily, one per entry (``Entry.op()``), so that an op
torch_tile cannot define yet fails alone, with its own error.
"""

import math
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F

from liger_kernel.ops.attn_res import attn_res_forward
from liger_kernel.ops.cross_entropy import cross_entropy_forward
from liger_kernel.ops.dyt import liger_dyt_fwd
from liger_kernel.ops.experimental.embedding import LigerEmbeddingFunction
from liger_kernel.ops.experimental.mm_int8int2 import matmul as int2_matmul
from liger_kernel.ops.fused_add_rms_norm import fused_add_rms_norm_forward
from liger_kernel.ops.fused_linear_cross_entropy import fused_linear_cross_entropy_forward
from liger_kernel.ops.fused_neighborhood_attention import fused_neighborhood_attention_forward
from liger_kernel.ops.geglu import geglu_forward
from liger_kernel.ops.group_norm import group_norm_forward
from liger_kernel.ops.grpo_loss import fused_selective_log_softmax
from liger_kernel.ops.jsd import jsd_forward
from liger_kernel.ops.kl_div import kldiv_forward_triton
from liger_kernel.ops.layer_norm import layer_norm_forward
from liger_kernel.ops.llama4_rope import llama4_rope_forward
from liger_kernel.ops.mhc import LigerMHCPreFunction
from liger_kernel.ops.modulated_rms_norm import modulated_rms_norm_forward
from liger_kernel.ops.multi_token_attention import LigerMultiTokenAttentionFunction
from liger_kernel.ops.poly_norm import poly_norm_forward
from liger_kernel.ops.qwen2vl_mrope import qwen2vl_mrope_forward
from liger_kernel.ops.relu_squared import relu_squared_forward
from liger_kernel.ops.rms_norm import rms_norm_forward
from liger_kernel.ops.rope import rope_forward
from liger_kernel.ops.softmax import _softmax_forward
from liger_kernel.ops.sparsemax import _sparsemax_forward
from liger_kernel.ops.swiglu import swiglu_forward, swiglu_fused_gate_up_forward
from liger_kernel.ops.tvd import tv_distance_forward_triton

import triton_tutorials as tutorials

from wrapper_corpus import READS_FLOAT, Case, Entry, Inputs as _Inputs, Tensor, bf16, f16, \
    f32, outputs, refused, strided


def _contiguous(*values):
    """What Liger's ``@ensure_contiguous`` does to a Function's arguments before its forward runs."""
    return tuple(v.contiguous() if isinstance(v, torch.Tensor) else v for v in values)


class _Ctx:
    """Stands in for the autograd ctx where a Liger Function's forward holds the host code itself."""

    def save_for_backward(self, *tensors):
        pass


def _no_bf16_on_cpu(dtype) -> str:
    return "bf16: Triton's interpreter computes bf16 wrongly (torch_tile refuses it on CPU)" if dtype == bf16 else ""


def _case(id, make, dtype=f32, gpu_only=""):
    return Case(id, make, dtype, gpu_only or _no_bf16_on_cpu(dtype))


# Why Triton's interpreter (3.8; the CPU path) cannot run some Liger kernels: checked with Triton's own
# TRITON_INTERPRET=1 too, so these are the interpreter's limits, not torch_tile's.
FLOAT_ARG_TO = ("Triton's interpreter passes float scalar arguments as Python floats, and the kernel calls "
                "{}.to(tl.float32) on one (AttributeError: 'float' object has no attribute 'to'); CUDA only")
LIBDEVICE = ("Triton's interpreter does not implement triton.language.extra.libdevice, and the kernel calls "
             "libdevice.{}; CUDA only")


# ================================================================================================
# Liger-Kernel
# ================================================================================================

# -- rms_norm: liger_kernel.ops.rms_norm.rms_norm_forward ---------------------------------------------------


def rms_norm(X: Tensor, W: Optional[Tensor], eps: float, offset: float = 0.0, casting_mode: str = "llama",
             row_mode: Optional[bool] = None) -> Tensor:
    X, W = _contiguous(X, W)  # LigerRMSNormFunction.forward is @ensure_contiguous
    Y, X, RSTD, BLOCK_SIZE, num_warps, casting_mode = rms_norm_forward(X, W, eps, offset, casting_mode, row_mode)
    return Y


def _rms(x: Tensor, eps: float) -> Tensor:
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms_norm_ref(X, W, eps, offset=0.0, casting_mode="llama", row_mode=None):
    y = _rms(X, eps)
    if W is not None:
        y = y * (offset + W.float())
    return y.to(X.dtype)


def _rms_case(id, shape, dtype=f32, *, weight=True, offset=0.0, mode="llama", layout=None):
    def make(device):
        r = _Inputs(device)
        X = r.randn(*shape, dtype=dtype)
        W = r.randn(shape[-1], dtype=dtype) if weight else None
        return (layout(X) if layout else X, W, 1e-6, offset, mode)
    return _case(id, make, dtype)


# -- fused_add_rms_norm ----------------------------------------------------------------------------------


def fused_add_rms_norm(X: Tensor, R: Tensor, W: Tensor, eps: float, offset: float = 0.0,
                       casting_mode: str = "llama") -> Tuple[Tensor, Tensor]:
    X, R, W = _contiguous(X, R, W)  # @ensure_contiguous
    Y, S, RSTD, BLOCK_SIZE, num_warps, num_stages, casting_mode = fused_add_rms_norm_forward(
        X, R, W, eps, offset, casting_mode
    )
    return Y, S


def fused_add_rms_norm_ref(X, R, W, eps, offset=0.0, casting_mode="llama"):
    S = X + R
    return rms_norm_ref(S, W, eps, offset), S


def _fused_add_case(id, shape, dtype=f32, *, offset=0.0, mode="llama", layout=None):
    def make(device):
        r = _Inputs(device)
        X, R, W = r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype), r.randn(shape[-1], dtype=dtype)
        return (layout(X) if layout else X, R, W, 1e-6, offset, mode)
    return _case(id, make, dtype)


# -- modulated_rms_norm ----------------------------------------------------------------------------------


def modulated_rms_norm(X: Tensor, W: Optional[Tensor], scale: Tensor, shift: Optional[Tensor], eps: float,
                       offset: float = 0.0, casting_mode: str = "llama") -> Tensor:
    X, W, scale, shift = _contiguous(X, W, scale, shift)  # @ensure_contiguous
    Y, RSTD, BLOCK_SIZE, num_warps, casting_mode, rows_per_modulation = modulated_rms_norm_forward(
        X, W, scale, shift, eps, offset, casting_mode
    )
    return Y


def modulated_rms_norm_ref(X, W, scale, shift, eps, offset=0.0, casting_mode="llama"):
    y = _rms(X, eps)
    if W is not None:
        y = y * (offset + W.float())
    y = y * (1.0 + scale.float())  # scale/shift: (B, 1, H), broadcast over the tokens of a batch row
    if shift is not None:
        y = y + shift.float()
    return y.to(X.dtype)


def _modulated_case(id, dtype=f32, *, shift=True, weight=True):
    def make(device):
        r = _Inputs(device)
        X = r.randn(2, 3, 40, dtype=dtype)
        W = r.randn(40, dtype=dtype) if weight else None
        scale = r.randn(2, 1, 40, dtype=dtype, scale=0.5)
        sh = r.randn(2, 1, 40, dtype=dtype) if shift else None
        return (X, W, scale, sh, 1e-6)
    return _case(id, make, dtype)


# -- poly_norm ----------------------------------------------------------------------------------------------


def poly_norm(X: Tensor, W: Tensor, B: Tensor, eps: float = 1e-6) -> Tensor:
    X, W, B = _contiguous(X, W, B)  # @ensure_contiguous
    Y, X, RSTD, BLOCK_SIZE, num_warps = poly_norm_forward(X, W, B, eps)
    return Y


def poly_norm_ref(X, W, B, eps=1e-6):
    x = X.float()
    w = W.float()
    y = w[0] * _rms(x**3, eps) + w[1] * _rms(x**2, eps) + w[2] * _rms(x, eps) + B.float()
    return y.to(X.dtype)


def _poly_case(id, dtype=f32, layout=None):
    def make(device):
        r = _Inputs(device)
        X = r.randn(3, 5, 48, dtype=dtype, scale=0.5)
        return (layout(X) if layout else X, r.randn(3, dtype=dtype), r.randn(1, dtype=dtype), 1e-6)
    return _case(id, make, dtype)


# -- layer_norm -------------------------------------------------------------------------------------------


def layer_norm(X: Tensor, W: Tensor, B: Tensor, eps: float) -> Tensor:
    X, W, B = _contiguous(X, W, B)  # LigerLayerNormFunction.forward is @ensure_contiguous
    Y, X, Mean, RSTD, BLOCK_SIZE, num_warps = layer_norm_forward(X, W, B, eps)
    return Y


def layer_norm_ref(X, W, B, eps):
    return F.layer_norm(X.float(), (X.shape[-1],), W.float(), B.float(), eps).to(X.dtype)


def _ln_case(id, shape, dtype=f32, layout=None):
    def make(device):
        r = _Inputs(device)
        X = r.randn(*shape, dtype=dtype)
        return (layout(X) if layout else X, r.randn(shape[-1], dtype=dtype), r.randn(shape[-1], dtype=dtype), 1e-5)
    return _case(id, make, dtype)


# -- group_norm -------------------------------------------------------------------------------------------


def group_norm(X: Tensor, W: Tensor, B: Tensor, num_channels: int, num_groups: int, eps: float) -> Tensor:
    X, W, B = _contiguous(X, W, B)  # LigerGroupNormFunction.forward is @ensure_contiguous
    Y, X, Mean, RSTD, BLOCK_SIZE = group_norm_forward(X, num_channels, num_groups, W, B, eps)
    return Y


def group_norm_ref(X, W, B, num_channels, num_groups, eps):
    return F.group_norm(X.float(), num_groups, W.float(), B.float(), eps).to(X.dtype)


def _gn_case(id, shape, groups, dtype=f32, layout=None):
    def make(device):
        r = _Inputs(device)
        X = r.randn(*shape, dtype=dtype)
        C = shape[1]
        return (layout(X) if layout else X, r.randn(C, dtype=dtype), r.randn(C, dtype=dtype), C, groups, 1e-5)
    return _case(id, make, dtype)


# -- swiglu -----------------------------------------------------------------------------------------------


def swiglu(a: Tensor, b: Tensor, gate_multiplier: float = 1.0, down_multiplier: float = 1.0) -> Tensor:
    a, b = _contiguous(a, b)  # LigerSiLUMulFunction.forward is @ensure_contiguous
    gate_multiplier = float(gate_multiplier)
    down_multiplier = float(down_multiplier)
    a, b, c = swiglu_forward(a, b, gate_multiplier)
    if down_multiplier != 1.0:
        c = c * down_multiplier
    return c


def swiglu_ref(a, b, gate_multiplier=1.0, down_multiplier=1.0):
    c = F.silu(a.float() * gate_multiplier).to(a.dtype).float() * b.float()
    return (c * down_multiplier).to(a.dtype)


def _swiglu_case(id, shape, dtype=f32, *, gm=1.0, dm=1.0, layout=None):
    def make(device):
        r = _Inputs(device)
        a, b = r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype)
        return (layout(a) if layout else a, b, gm, dm)
    return _case(id, make, dtype)


def swiglu_fused_gate_up(y: Tensor) -> Tensor:
    (y,) = _contiguous(y)  # LigerFusedGateUpSiLUMulFunction.forward is @ensure_contiguous
    y, c = swiglu_fused_gate_up_forward(y)
    return c


def swiglu_fused_gate_up_ref(y):
    gate, up = y.chunk(2, dim=-1)
    return (F.silu(gate.float()).to(y.dtype).float() * up.float()).to(y.dtype)


def _fused_gate_up_case(id, shape, dtype=f32, layout=None):
    def make(device):
        y = _Inputs(device).randn(*shape, dtype=dtype)
        return (layout(y) if layout else y,)
    return _case(id, make, dtype)


# -- geglu / relu_squared -----------------------------------------------------------------------------------------


def geglu(a: Tensor, b: Tensor) -> Tensor:
    a, b = _contiguous(a, b)  # LigerGELUMulFunction.forward is @ensure_contiguous
    a, b, c = geglu_forward(a, b)
    return c


def geglu_ref(a, b):
    return (F.gelu(a.float(), approximate="tanh").to(a.dtype).float() * b.float()).to(a.dtype)


def _pair_case(id, shape, dtype=f32, layout=None):
    def make(device):
        r = _Inputs(device)
        a, b = r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype)
        return (layout(a) if layout else a, b)
    return _case(id, make, dtype)


def relu_squared(X: Tensor) -> Tensor:
    (X,) = _contiguous(X)  # LigerReLUSquaredFunction.forward is @ensure_contiguous
    return relu_squared_forward(X)


def relu_squared_ref(X):
    return F.relu(X.float()).pow(2).to(X.dtype)


def _one_case(id, shape, dtype=f32, layout=None, scale=1.0):
    def make(device):
        x = _Inputs(device).randn(*shape, dtype=dtype, scale=scale)
        return (layout(x) if layout else x,)
    return _case(id, make, dtype)


# -- dyt (autotuned) ------------------------------------------------------------------------------------------


def dyt(x: Tensor, alpha: Tensor, gamma: Tensor, beta: Optional[Tensor]) -> Tensor:
    x, alpha, gamma, beta = _contiguous(x, alpha, gamma, beta)  # LigerDyTFunction.forward is @ensure_contiguous
    return liger_dyt_fwd(x, alpha, gamma, beta)


def dyt_ref(x, alpha, gamma, beta):
    y = gamma.float() * torch.tanh(alpha.float() * x.float())
    if beta is not None:
        y = y + beta.float()
    return y.to(x.dtype)


def _dyt_case(id, shape, dtype=f32, *, beta=True, layout=None):
    def make(device):
        r = _Inputs(device)
        x = r.randn(*shape, dtype=dtype)
        H = shape[-1]
        return (layout(x) if layout else x, torch.full((1,), 0.7, dtype=dtype, device=device),
                r.randn(H, dtype=dtype), r.randn(H, dtype=dtype) if beta else None)
    return _case(id, make, dtype)


# -- softmax / sparsemax ------------------------------------------------------------------------------------------


def softmax(x: Tensor) -> Tensor:
    (x,) = _contiguous(x)  # LigerSoftmaxFunction.forward is @ensure_contiguous
    y, BLOCK_SIZE, num_warps, multi_block_launch = _softmax_forward(x)
    return y


def softmax_ref(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def sparsemax(x: Tensor, dim: int = -1) -> Tensor:
    (x,) = _contiguous(x)  # LigerSparsemaxFunction.forward is @ensure_contiguous
    y, out_flat = _sparsemax_forward(x, dim)
    return y


def sparsemax_ref(x, dim=-1):
    z = x.float().transpose(dim, -1)
    zs, _ = torch.sort(z, dim=-1, descending=True)
    k = torch.arange(1, z.shape[-1] + 1, device=x.device, dtype=torch.float32)
    cssv = zs.cumsum(-1)
    support = (1 + k * zs) > cssv
    k_z = support.sum(-1, keepdim=True)
    tau = (cssv.gather(-1, k_z - 1) - 1) / k_z
    return torch.clamp(z - tau, min=0).transpose(dim, -1).to(x.dtype)


def _sparsemax_case(id, shape, dim, dtype=f32, layout=None):
    def make(device):
        x = _Inputs(device).randn(*shape, dtype=dtype)
        return (layout(x) if layout else x, dim)
    return _case(id, make, dtype)


# -- rope (writes q/k in place when they are (b, s, h, d)-contiguous, and returns views of them) -------------


def rope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor] = None,
         unsqueeze_dim: int = 1, rotary_dim: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    # LigerRopeFunction.forward (no @ensure_contiguous)
    q, k, cos, sin = rope_forward(q, k, cos, sin, position_ids, unsqueeze_dim, rotary_dim)
    return q, k


def rope_out_of_place(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor] = None,
                      unsqueeze_dim: int = 1, rotary_dim: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    # What a user makes of rope_forward as an op: hand it copies (clone keeps the layout), so that its
    # in-place-or-copy aliasing (see liger::rope) touches only tensors the body made: a functional op.
    q, k, cos, sin = rope_forward(q.clone(), k.clone(), cos, sin, position_ids, unsqueeze_dim, rotary_dim)
    return q, k


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _hf_rope(x, cos, sin):  # HF apply_rotary_pos_emb on the first cos.shape[-1] features (partial RoPE)
    rd = cos.shape[-1]
    rot, keep = x[..., :rd], x[..., rd:]
    return torch.cat((rot * cos + _rotate_half(rot) * sin, keep), dim=-1)


def rope_ref(q, k, cos, sin, position_ids=None, unsqueeze_dim=1, rotary_dim=None):
    c, s = cos.float().unsqueeze(unsqueeze_dim), sin.float().unsqueeze(unsqueeze_dim)
    return _hf_rope(q.float(), c, s).to(q.dtype), _hf_rope(k.float(), c, s).to(k.dtype)


def _cos_sin(r, batch, seq, rd, dtype):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rd, 2, dtype=torch.float32) / rd))
    pos = torch.arange(seq, dtype=torch.float32)[:, None] + torch.arange(batch, dtype=torch.float32)[:, None, None]
    emb = torch.cat((pos * inv_freq, pos * inv_freq), dim=-1)  # (batch, seq, rd)
    return emb.cos().to(dtype=dtype, device=r.device), emb.sin().to(dtype=dtype, device=r.device)


def _rope_case(id, dtype=f32, *, hf_layout=True, cos_batch=1, rd=16, hd=16):
    def make(device):
        r = _Inputs(device)
        bsz, seq, nq, nk = 2, 5, 4, 2
        if hf_layout:  # q_proj(x).view(b, s, h, d).transpose(1, 2), as HF models pass them
            q = r.randn(bsz, seq, nq, hd, dtype=dtype).transpose(1, 2)
            k = r.randn(bsz, seq, nk, hd, dtype=dtype).transpose(1, 2)
        else:
            q, k = r.randn(bsz, nq, seq, hd, dtype=dtype), r.randn(bsz, nk, seq, hd, dtype=dtype)
        cos, sin = _cos_sin(r, cos_batch, seq, rd, dtype)
        return (q, k, cos, sin)
    return _case(id, make, dtype)


# -- qwen2vl_mrope ------------------------------------------------------------------------------------------------


def qwen2vl_mrope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, mrope_section: List[int],
                  unsqueeze_dim: int = 1) -> Tuple[Tensor, Tensor]:
    # LigerQwen2VLMRopeFunction.forward (no @ensure_contiguous), on copies of q/k as in rope_out_of_place:
    # the wrapper has rope_forward's in-place-or-copy aliasing (see liger::rope)
    q, k, cos, sin = qwen2vl_mrope_forward(q.clone(), k.clone(), cos, sin, mrope_section)
    return q, k


def qwen2vl_mrope_ref(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    section = list(mrope_section) * 2  # HF apply_multimodal_rotary_pos_emb
    c = torch.cat([m[i % 3] for i, m in enumerate(cos.float().split(section, dim=-1))], dim=-1)
    s = torch.cat([m[i % 3] for i, m in enumerate(sin.float().split(section, dim=-1))], dim=-1)
    c, s = c.unsqueeze(unsqueeze_dim), s.unsqueeze(unsqueeze_dim)
    return _hf_rope(q.float(), c, s).to(q.dtype), _hf_rope(k.float(), c, s).to(k.dtype)


def _mrope_case(id, dtype=f32):
    def make(device):
        r = _Inputs(device)
        bsz, seq, nq, nk, hd = 2, 5, 4, 2, 16
        q = r.randn(bsz, seq, nq, hd, dtype=dtype).transpose(1, 2)
        k = r.randn(bsz, seq, nk, hd, dtype=dtype).transpose(1, 2)
        cos, sin = _cos_sin(r, bsz, seq, hd, dtype)  # three position grids (t, h, w): shifted copies
        cos = torch.stack([cos, cos.roll(1, 1), cos.roll(2, 1)]).contiguous()
        sin = torch.stack([sin, sin.roll(1, 1), sin.roll(2, 1)]).contiguous()
        return (q, k, cos, sin, [2, 3, 3])
    return _case(id, make, dtype)


# -- llama4_rope (complex frequencies; writes q/k in place and returns them when they need no cast) ---------


def llama4_rope(q: Tensor, k: Tensor, freqs_cis: Tensor, BLOCK_SIZE: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    # LigerLlama4RopeFunction.forward
    q_out, k_out = llama4_rope_forward(q, k, freqs_cis, BLOCK_SIZE, imag_sign=1.0)
    return q_out, k_out


def llama4_rope_ref(q, k, freqs_cis, BLOCK_SIZE=None):
    f = freqs_cis[: q.shape[1]].reshape(1, q.shape[1], 1, -1)

    def rot(x):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * f).flatten(3).to(x.dtype)

    return rot(q), rot(k)


def _llama4_case(id, dtype=f32):
    def make(device):
        r = _Inputs(device)
        bsz, seq, nq, nk, hd = 2, 6, 4, 2, 32
        angles = torch.arange(seq, dtype=torch.float32)[:, None] * (1.0 / 10000 ** (torch.arange(0, hd, 2) / hd))
        freqs = torch.polar(torch.ones_like(angles), angles).to(device)  # (seq, hd/2) complex64
        return (r.randn(bsz, seq, nq, hd, dtype=dtype), r.randn(bsz, seq, nk, hd, dtype=dtype), freqs)
    return _case(id, make, dtype)


# -- cross_entropy (the kernel writes the logits' gradient, or zeros for ignored rows, into the logits) -------


def cross_entropy(logits: Tensor, target: Tensor, weight: Optional[Tensor] = None, ignore_index: int = -100,
                  lse_square_scale: float = 0.0, label_smoothing: float = 0.0, reduction: str = "mean",
                  softcap: Optional[float] = None) -> Tensor:
    # LigerCrossEntropyFunction.forward (return_z_loss / token accuracy / predicted tokens off)
    loss, z_loss, token_accuracy, predicted_tokens, logits = cross_entropy_forward(
        logits, target, weight, ignore_index, lse_square_scale, label_smoothing, reduction, softcap,
        False, False, False,
    )
    return loss


def cross_entropy_ref(logits, target, weight=None, ignore_index=-100, lse_square_scale=0.0, label_smoothing=0.0,
                      reduction="mean", softcap=None):
    x = logits.float()
    if softcap is not None:
        x = softcap * torch.tanh(x / softcap)
    loss = F.cross_entropy(x, target, weight=None if weight is None else weight.float(), ignore_index=ignore_index,
                           reduction=reduction, label_smoothing=label_smoothing)
    return loss.to(logits.dtype)


def _ce_case(id, dtype=f32, *, BT=8, V=100, reduction="mean", weight=False, smoothing=0.0, softcap=None,
             layout=None):
    def make(device):
        r = _Inputs(device)
        logits = r.randn(BT, V, dtype=dtype)
        target = r.randint(V, BT)
        target[::3] = -100  # ignored rows
        w = r.rand(V) + 0.5 if weight else None
        return (layout(logits) if layout else logits, target, w, -100, 0.0, smoothing, reduction, softcap)
    gpu_only = (FLOAT_ARG_TO.format("softcap") + " (and libdevice.tanh)" if softcap is not None
                else FLOAT_ARG_TO.format("sum_non_ignore_weight") if weight else "")
    return _case(id, make, dtype, gpu_only)


# -- fused_linear_cross_entropy (torch matmuls, slices, in-place updates, .item(), a chunk loop) --------------------


def fused_linear_cross_entropy(x: Tensor, weight: Tensor, target: Tensor, bias: Optional[Tensor] = None,
                               ce_weight: Optional[Tensor] = None, ignore_index: int = -100,
                               lse_square_scale: float = 0.0, label_smoothing: float = 0.0,
                               reduction: str = "mean", softcap: Optional[float] = None) -> Tensor:
    # LigerFusedLinearCrossEntropyFunction.forward
    needs_grad = x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad)
    defer_grads = reduction == "none" and needs_grad
    loss, z_loss, token_accuracy, predicted_tokens, grad_input, grad_weight, grad_bias = (
        fused_linear_cross_entropy_forward(
            _input=x,
            weight=weight,
            target=target,
            bias=bias,
            ce_weight=ce_weight,
            ignore_index=ignore_index,
            lse_square_scale=lse_square_scale,
            label_smoothing=label_smoothing,
            reduction=reduction,
            softcap=softcap,
            return_z_loss=False,
            accum_dtype=None,
            use_token_scaling=False,
            return_token_accuracy=False,
            return_predicted_tokens=False,
            ce_impl=None,
            ce_mode=None,
            compute_gradients=False if defer_grads else None,
        )
    )
    return loss


def fused_linear_cross_entropy_ref(x, weight, target, bias=None, ce_weight=None, ignore_index=-100,
                                   lse_square_scale=0.0, label_smoothing=0.0, reduction="mean", softcap=None):
    logits = x.float() @ weight.float().t()
    if bias is not None:
        logits = logits + bias.float()
    return cross_entropy_ref(logits, target, ce_weight, ignore_index, 0.0, label_smoothing, reduction, softcap)


def _flce_case(id, dtype=f32, *, bias=True, reduction="mean"):
    def make(device):
        r = _Inputs(device)
        BT, H, V = 16, 32, 100
        target = r.randint(V, BT)
        target[1::4] = -100
        return (r.randn(BT, H, dtype=dtype), r.randn(V, H, dtype=dtype, scale=0.2), target,
                r.randn(V, dtype=dtype) if bias else None, None, -100, 0.0, 0.0, reduction)
    return _case(id, make, dtype)


# -- kl_div / jsd / tvd -------------------------------------------------------------------------------------------


def kl_div(y_pred: Tensor, y_true: Tensor, reduction: str = "batchmean", log_target: bool = False,
           eps: float = 1e-10) -> Tensor:
    y_pred, y_true = _contiguous(y_pred, y_true)  # LigerKLDivLossFunction.forward is @ensure_contiguous
    return kldiv_forward_triton(y_pred, y_true, log_target=log_target, reduction=reduction, eps=eps)


def kl_div_ref(y_pred, y_true, reduction="batchmean", log_target=False, eps=1e-10):
    x, t = y_pred.float(), y_true.float()
    loss = torch.exp(t) * (t - x) if log_target else t * (torch.log(torch.clamp(t, min=eps)) - x)
    BT, V = loss.shape
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / (BT * V), "batchmean": loss.sum() / BT}[reduction]


def _kl_case(id, dtype=f32, *, reduction="batchmean", log_target=False, layout=None):
    def make(device):
        r = _Inputs(device)
        y_pred = torch.log_softmax(r.randn(6, 50), -1).to(dtype)
        y_true = torch.softmax(r.randn(6, 50), -1)
        y_true = (y_true.log() if log_target else y_true).to(dtype)
        return (layout(y_pred) if layout else y_pred, y_true, reduction, log_target)
    return _case(id, make, dtype)


def jsd(student: Tensor, teacher: Tensor, shift_labels: Optional[Tensor] = None, beta: float = 0.5,
        ignore_index: int = -100) -> Tensor:
    student, teacher, shift_labels = _contiguous(student, teacher, shift_labels)  # @ensure_contiguous
    # LigerJSDFunction.forward
    has_label = False
    if shift_labels is not None:
        assert shift_labels.shape == (student.shape[0],), (
            f"the shape of shift_labels must be (BT,). Got: {shift_labels.shape}"
        )
        shift_labels = shift_labels.contiguous()
        has_label = True
    loss, dX = jsd_forward(student, teacher, shift_labels, beta, ignore_index, has_label, None, None)
    return loss


def jsd_ref(student, teacher, shift_labels=None, beta=0.5, ignore_index=-100):
    x, y = student.float(), teacher.float()  # log Q, log P
    q, p = x.exp(), y.exp()
    if beta == 0.0:
        loss = p * (y - x)
    elif beta == 1.0:
        loss = q * (x - y)
    else:
        log_m = torch.log(beta * p + (1 - beta) * q)
        loss = beta * p * (y - log_m) + (1 - beta) * q * (x - log_m)
    rows = torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
    if shift_labels is not None:
        rows = shift_labels != ignore_index
    return (loss[rows].sum() / rows.sum()).to(student.dtype)


def _jsd_case(id, dtype=f32, *, beta=0.5, labels=False):
    def make(device):
        r = _Inputs(device)
        student = torch.log_softmax(r.randn(6, 40), -1).to(dtype)
        teacher = torch.log_softmax(r.randn(6, 40), -1).to(dtype)
        shift = None
        if labels:
            shift = r.randint(40, 6)
            shift[2] = -100
        return (student, teacher, shift, beta, -100)
    return _case(id, make, dtype)


def tvd(p: Tensor, q: Tensor, shift_labels: Optional[Tensor] = None, reduction: str = "batchmean",
        ignore_index: int = -100) -> Tensor:
    p, q, shift_labels = _contiguous(p, q, shift_labels)  # LigerTVDLossFunction.forward is @ensure_contiguous
    has_label = False
    if shift_labels is not None:
        assert shift_labels.shape == (p.shape[0],), (
            f"the shape of shift_labels must be (BT,). Got: {shift_labels.shape}"
        )
        shift_labels = shift_labels.contiguous()
        has_label = True
    loss, grads = tv_distance_forward_triton(p, q, shift_labels, reduction, ignore_index, has_label)
    return loss


def tvd_ref(p, q, shift_labels=None, reduction="batchmean", ignore_index=-100):
    loss = 0.5 * (p.float() - q.float()).abs()
    rows = torch.ones(p.shape[0], dtype=torch.bool, device=p.device)
    if shift_labels is not None:
        rows = shift_labels != ignore_index
        loss = loss * rows[:, None]
    n = int(rows.sum())
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / (n * p.shape[1]),
            "batchmean": loss.sum() / n}[reduction]


def _tvd_case(id, dtype=f32, *, reduction="batchmean", labels=False):
    def make(device):
        r = _Inputs(device)
        p = torch.softmax(r.randn(6, 40), -1).to(dtype)
        q = torch.softmax(r.randn(6, 40), -1).to(dtype)
        shift = None
        if labels:
            shift = r.randint(40, 6)
            shift[4] = -100
        return (p, q, shift, reduction, -100)
    return _case(id, make, dtype)


# -- embedding / multi_token_attention / mhc_pre: the Function's forward is the host code -------------------------


def embedding(embeddings: Tensor, indices: Tensor) -> Tensor:
    return LigerEmbeddingFunction.forward(_Ctx(), embeddings, indices)


def embedding_ref(embeddings, indices):
    return F.embedding(indices, embeddings)


def _embedding_case(id, dtype=f32, layout=None):
    def make(device):
        r = _Inputs(device)
        emb = r.randn(50, 24, dtype=dtype)
        return (layout(emb) if layout else emb, r.randint(50, 3, 7))
    return _case(id, make, dtype)


def multi_token_attention(scores: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: int = 1,
                          padding: int = 0, dilation: int = 1, groups: int = 1, sparse: bool = False) -> Tensor:
    return LigerMultiTokenAttentionFunction.forward(_Ctx(), scores, weight, bias, stride, padding, dilation, groups,
                                                    sparse)


def multi_token_attention_ref(scores, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, sparse=False):
    L = scores.shape[-1]
    future = torch.ones(L, L, dtype=torch.bool, device=scores.device).triu(1)
    s = scores.float().masked_fill(future, -1e9)
    probs = sparsemax_ref(s, -1) if sparse else torch.softmax(s, -1)
    out = F.conv2d(probs.to(scores.dtype).float(), weight.float(), None if bias is None else bias.float(),
                   stride=stride, padding=padding, dilation=dilation, groups=groups)
    return out.masked_fill(future, 0.0).to(scores.dtype)


def _mta_case(id, dtype=f32, *, sparse=False, bias=True):
    def make(device):
        r = _Inputs(device)
        C, L = 2, 9
        return (r.randn(2, C, L, L, dtype=dtype), r.randn(C, C, 3, 3, dtype=dtype, scale=0.3),
                r.randn(C, dtype=dtype) if bias else None, 1, 1, 1, 1, sparse)
    return _case(id, make, dtype)


def mhc_pre(x: Tensor, h_pre: Tensor) -> Tensor:
    return LigerMHCPreFunction.forward(_Ctx(), x, h_pre)


def mhc_pre_ref(x, h_pre):
    return (x.float() * h_pre.float()[..., None]).sum(-2).to(x.dtype)


def _mhc_case(id, dtype=f32, layout=None):
    def make(device):
        r = _Inputs(device)
        x = r.randn(2, 5, 4, 48, dtype=dtype)  # (B, T, HC, C)
        return (layout(x) if layout else x, r.rand(2, 5, 4, dtype=dtype))
    return _case(id, make, dtype)


# -- selective log-softmax (GRPO), attn_res, neighborhood attention, int2 matmul ------------------------------


def selective_log_softmax(logits: Tensor, input_ids: Tensor, temperature: float = 0.9,
                          mask: Optional[Tensor] = None) -> Tensor:
    return fused_selective_log_softmax(logits, input_ids, temperature, mask)  # called so by the GRPO trainers


def selective_log_softmax_ref(logits, input_ids, temperature=0.9, mask=None):
    L = logits.shape[1] - 1
    logp = torch.log_softmax(logits[:, :-1].float() / temperature, -1)
    out = logp.gather(-1, input_ids[:, -L:, None]).squeeze(-1)
    if mask is not None:
        out = out * (mask[:, -L:] != 0)
    return out


def _sls_case(id, dtype=f32, *, mask=False):
    def make(device):
        r = _Inputs(device)
        B, L, N = 2, 5, 70
        ids = r.randint(N, B, L + 3)  # prompt + completion: the wrapper slices the last L
        m = None
        if mask:
            m = torch.ones(B, L + 3, dtype=torch.int64, device=device)
            m[0, -2] = 0
        return (r.randn(B, L + 1, N, dtype=dtype), ids, 0.9, m)
    return _case(id, make, dtype)


def attn_res(V_stacked: Tensor, w_query: Tensor, w_norm: Tensor, eps: float) -> Tensor:
    V_stacked, w_query, w_norm = _contiguous(V_stacked, w_query, w_norm)  # LigerAttnResFunction: @ensure_contiguous
    h, V_3d, Alpha, RSTD = attn_res_forward(V_stacked, w_query, w_norm, eps)
    return h


def attn_res_ref(V_stacked, w_query, w_norm, eps):
    v = V_stacked.float()  # (N, B, T, D)
    k = (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps)).to(w_norm.dtype).float() * w_norm.float()
    alpha = torch.softmax((k * w_query.float()).sum(-1), dim=0)  # over the N blocks
    return (alpha[..., None] * v).sum(0).to(V_stacked.dtype)


def _attn_res_case(id, dtype=f32, layout=None):
    def make(device):
        r = _Inputs(device)
        V = r.randn(3, 2, 4, 32, dtype=dtype)
        return (layout(V) if layout else V, r.randn(32, dtype=dtype, scale=0.3), r.randn(32, dtype=dtype), 1e-6)
    return _case(id, make, dtype)


def neighborhood_attention(query: Tensor, key: Tensor, value: Tensor, kernel_size: int = 7, dilation: int = 1,
                           scale: Optional[float] = None) -> Tensor:
    query, key, value = _contiguous(query, key, value)  # @ensure_contiguous
    output, attn_weights, softmax_params = fused_neighborhood_attention_forward(
        query, key, value, kernel_size, dilation, scale
    )
    return output


def neighborhood_attention_ref(query, key, value, kernel_size=7, dilation=1, scale=None):
    L, D = query.shape[-2], query.shape[-1]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    i = torch.arange(L, device=query.device)
    rel = i[None, :] - i[:, None]
    allowed = rel.abs() <= (kernel_size // 2) * dilation
    if dilation > 1:
        allowed &= rel % dilation == 0
    s = (query.float() @ key.float().transpose(-1, -2)) * scale
    p = torch.softmax(s.masked_fill(~allowed, float("-inf")), -1)
    return (p @ value.float()).to(query.dtype)


def _na_case(id, dtype=f32, *, kernel_size=5, dilation=1):
    def make(device):
        r = _Inputs(device)
        shape = (1, 2, 16, 16)
        return (r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype),
                kernel_size, dilation)
    return _case(id, make, dtype)


def int2_matmul_op(a: Tensor, b: Tensor) -> Tensor:
    return int2_matmul(a, b)


def int2_matmul_ref(a, b):
    R = b.shape[0]
    w = torch.empty(4 * R, b.shape[1], dtype=torch.int32, device=b.device)
    for i in range(4):  # row block i of the unpacked weights is held in bits 2i..2i+1, stored as value + 1
        w[i * R:(i + 1) * R] = ((b.to(torch.int32) >> (2 * i)) & 3) - 1
    return (a.double() @ w.double()).to(torch.int32)  # exact: |sums| < 2**24


def _int2_case(id):
    def make(device):
        g = torch.Generator().manual_seed(0)
        a = torch.randint(-8, 8, (16, 512), generator=g, dtype=torch.int8)
        b = torch.randint(0, 256, (128, 32), generator=g).to(torch.uint8)
        return (a.to(device), b.to(device))
    return Case(id, make, torch.int8)


# ================================================================================================
# Triton tutorials
# ================================================================================================


def tutorial_add(x: Tensor, y: Tensor) -> Tensor:
    return tutorials.add(x, y)


def tutorial_softmax(x: Tensor) -> Tensor:
    return tutorials.softmax(x)


def tutorial_matmul(a: Tensor, b: Tensor, activation: str = "") -> Tensor:
    return tutorials.matmul(a, b, activation)


def tutorial_matmul_ref(a, b, activation=""):
    c = a.float() @ b.float()
    if activation == "leaky_relu":
        c = F.leaky_relu(c, 0.01)
    return c.to(torch.float16)


def tutorial_dropout(x: Tensor, p: float, seed: int) -> Tensor:
    return tutorials.seeded_dropout(x, p, seed)


def tutorial_dropout_check(result, args):
    (out,), (x, p, _seed) = outputs(result), args
    kept = out != 0
    torch.testing.assert_close(out[kept], (x / (1 - p))[kept], atol=1e-6, rtol=1e-6)
    assert abs((~kept).float().mean().item() - p) < 0.1, "the dropped fraction is far from p"


def tutorial_layer_norm(x: Tensor, normalized_shape: List[int], weight: Tensor, bias: Tensor, eps: float) -> Tensor:
    return tutorials.LayerNorm.forward(_Ctx(), x, normalized_shape, weight, bias, eps)


def _tut_ln_case(id, shape, dtype=f32):
    def make(device):
        r = _Inputs(device)
        H = shape[-1]
        return (r.randn(*shape, dtype=dtype), [H], r.randn(H, dtype=dtype), r.randn(H, dtype=dtype), 1e-5)
    return _case(id, make, dtype)


def _tut_matmul_case(id, M, K, N, activation=""):
    def make(device):
        r = _Inputs(device)
        return (r.randn(M, K, dtype=f16), r.randn(K, N, dtype=f16), activation)
    return Case(id, make, f16)


# ================================================================================================
# The corpus
# ================================================================================================

ENTRIES: List[Entry] = [
    Entry("rms_norm", "rms_norm_forward", rms_norm, rms_norm_ref, [
        _rms_case("f32-3d", (2, 5, 96)),
        _rms_case("f16-2d", (7, 64), f16),
        _rms_case("f16-gemma-offset", (3, 80), f16, offset=1.0, mode="gemma"),
        _rms_case("f32-none-noweight", (4, 48), weight=False, mode="none"),
        _rms_case("f32-strided", (6, 40), layout=strided),
        _rms_case("f32-block-kernel", (32768, 32)),  # n_rows >= 32768 and BLOCK_SIZE <= 256: the block kernel
        _rms_case("bf16", (4, 128), bf16),
    ], cpu_skip=FLOAT_ARG_TO.format("eps") + " (and libdevice.rsqrt)",
        notes="x.view(-1, dim), str casting_mode -> constexpr int, Optional weight, a row-count branch, "
             "two kernels, device_context(x.device)"),
    Entry("fused_add_rms_norm", "fused_add_rms_norm_forward", fused_add_rms_norm, fused_add_rms_norm_ref, [
        _fused_add_case("f32", (2, 3, 64)),
        _fused_add_case("f16-gemma", (5, 72), f16, offset=1.0, mode="gemma"),
        _fused_add_case("f32-strided", (6, 40), layout=strided),
        _fused_add_case("bf16", (4, 64), bf16),
    ], cpu_skip=FLOAT_ARG_TO.format("eps"), notes="returns two outputs, views of allocations"),
    Entry("modulated_rms_norm", "modulated_rms_norm_forward", modulated_rms_norm, modulated_rms_norm_ref, [
        _modulated_case("f32"),
        _modulated_case("f32-noshift-noweight", shift=False, weight=False),
        _modulated_case("f16", f16),
    ], cpu_skip=FLOAT_ARG_TO.format("eps"),
        notes="numel() % dim asserts, a constexpr from a size quotient (rows_per_modulation), Optional shift "
             "replaced by another tensor"),
    Entry("poly_norm", "poly_norm_forward", poly_norm, poly_norm_ref, [
        _poly_case("f32"),
        _poly_case("f32-strided", layout=strided),
        _poly_case("bf16", bf16),
    ], tol_scale=10, cpu_skip=FLOAT_ARG_TO.format("eps")),
    Entry("layer_norm", "layer_norm_forward", layer_norm, layer_norm_ref, [
        _ln_case("f32-3d", (2, 4, 100)),
        _ln_case("f16", (5, 64), f16),
        _ln_case("f32-strided", (6, 40), layout=strided),
        _ln_case("bf16", (3, 128), bf16),
    ], cpu_skip=FLOAT_ARG_TO.format("eps"), notes="raises ValueError on a size mismatch (a guard)"),
    Entry("group_norm", "group_norm_forward", group_norm, group_norm_ref, [
        _gn_case("f32-3d", (2, 6, 10), 3),
        _gn_case("f32-4d", (2, 4, 3, 5), 2),
        _gn_case("f32-strided", (2, 6, 10), 2, layout=strided),
        _gn_case("f16", (2, 4, 12), 2, f16),
    ], cpu_skip=FLOAT_ARG_TO.format("eps"),
        notes="X.view(batch, groups, -1).contiguous(), int op arguments in size arithmetic"),
    Entry("swiglu", "swiglu_forward", swiglu, swiglu_ref, [
        _swiglu_case("f32", (2, 3, 64)),
        _swiglu_case("f16-multipliers", (5, 100), f16, gm=0.5, dm=2.0),
        _swiglu_case("f32-strided", (6, 40), layout=strided),
        _swiglu_case("bf16", (4, 128), bf16),
    ], cpu_skip=FLOAT_ARG_TO.format("gate_multiplier"),
        notes="float(arg), `if down_multiplier != 1.0` (a branch on a float argument), c * down_multiplier "
             "(an ATen op on an output), infer_device_arch()"),
    Entry("swiglu_fused_gate_up", "swiglu_fused_gate_up_forward", swiglu_fused_gate_up, swiglu_fused_gate_up_ref, [
        _fused_gate_up_case("f32", (2, 3, 128)),
        _fused_gate_up_case("f16", (5, 80), f16),
        _fused_gate_up_case("f32-strided", (8, 64), layout=strided),
    ], notes="raises ValueError on an odd size, c.view(*shape[:-1], ffn)"),
    Entry("geglu", "geglu_forward", geglu, geglu_ref, [
        _pair_case("f32", (2, 3, 64)),
        _pair_case("f16", (7, 50), f16),
        _pair_case("f32-strided", (6, 40), layout=strided),
    ], cpu_skip=LIBDEVICE.format("tanh")),
    Entry("relu_squared", "relu_squared_forward", relu_squared, relu_squared_ref, [
        _one_case("f32", (2, 3, 64)),
        _one_case("f16", (7, 50), f16),
        _one_case("f32-strided", (6, 40), layout=strided),
    ]),
    Entry("dyt", "liger_dyt_fwd", dyt, dyt_ref, [
        _dyt_case("f32", (2, 3, 64)),
        _dyt_case("f32-nobeta", (4, 100), beta=False),
        _dyt_case("f16-strided", (6, 40), f16, layout=strided),
        _dyt_case("bf16", (4, 128), bf16),
    ], cpu_skip=LIBDEVICE.format("tanh"), exact=False,
        notes="@triton.autotune with a lambda grid, assert x.is_contiguous(), None for a pointer"),
    Entry("softmax", "_softmax_forward", softmax, softmax_ref, [
        _one_case("f32-3d", (2, 3, 70)),
        _one_case("f16", (5, 300), f16),
        _one_case("f32-strided", (6, 40), layout=strided),
        _one_case("bf16", (4, 128), bf16),
    ], notes="*batch unpacking of x.shape, x.contiguous().view(-1, n)"),
    Entry("sparsemax", "_sparsemax_forward", sparsemax, sparsemax_ref, [
        _sparsemax_case("f32-lastdim", (4, 30), -1),
        _sparsemax_case("f32-dim1", (2, 9, 5), 1),
        _sparsemax_case("f16", (3, 20), -1, f16),
    ], notes="torch.sort on the input (an ATen op feeding a kernel), transpose(dim, -1).contiguous(), "
             "returns a transposed view"),
    Entry("rope", "rope_forward", rope, rope_ref, [
        _rope_case("f32-hf-layout"),
        _rope_case("f16-hf-layout", f16),
        # the same op on another layout: the kernel writes copies, and q/k stay as they were (as in eager)
        _rope_case("f32-bhsd-contiguous", hf_layout=False),
        _rope_case("f32-partial-rotary", rd=8),
        _rope_case("f32-per-batch-cos", cos_batch=2),
        _rope_case("bf16-hf-layout", bf16),
    ], mutates_args=("q", "k"),
        notes="as LigerRopeFunction calls it: writes q/k in place when transpose(1,2) is already contiguous "
              "(HF layout), else into copies; returns transposed views (of the inputs themselves, in HF layout)"),
    Entry("rope_out_of_place", "rope_forward", rope_out_of_place, rope_ref, [
        _rope_case("f32-hf-layout"),
        _rope_case("f16-hf-layout", f16),
        _rope_case("f32-bhsd-contiguous", hf_layout=False),
        _rope_case("f32-partial-rotary", rd=8),
        _rope_case("f32-per-batch-cos", cos_batch=2),
        _rope_case("bf16-hf-layout", bf16),
    ], notes="rope_forward on clones of q/k: transposed views of body-made tensors, Optional[int] rotary_dim, "
             "unsqueeze/squeeze of cos"),
    Entry("qwen2vl_mrope", "qwen2vl_mrope_forward", qwen2vl_mrope, qwen2vl_mrope_ref, [
        _mrope_case("f32"),
        _mrope_case("f16", f16),
    ], notes="List[int] argument indexed into constexprs; on clones of q/k as rope_out_of_place"),
    Entry("llama4_rope", "llama4_rope_forward", llama4_rope, llama4_rope_ref, [
        _llama4_case("f32"),
        _llama4_case("f16", f16),
    ], mutates_args=("q", "k"),
        notes="complex64 input: is_complex(), reshape, slicing, view_as_real (a view of another element width); "
              "q.to(dtype).contiguous() is q itself, so the kernel writes q/k and the wrapper returns them (the "
              "op returns its inputs)"),
    Entry("cross_entropy", "cross_entropy_forward", cross_entropy, cross_entropy_ref, [
        _ce_case("f32-mean"),
        _ce_case("f16-sum", f16, reduction="sum"),
        _ce_case("f32-none", reduction="none"),
        refused(_ce_case("f32-weight", weight=True), READS_FLOAT,
                 "with weights the wrapper reads a float on the host: weight.sum().item()"),
        _ce_case("f32-label-smoothing", smoothing=0.1),
        _ce_case("f32-softcap", softcap=30.0),
        _ce_case("f32-strided-logits", BT=8, V=64, layout=strided),  # the kernel writes a contiguous copy
        _ce_case("bf16-mean", bf16),
    ], mutates_args=("logits",), tol_scale=10,
        trace_runs_body="the trace learns n_non_ignore = (target != ignore_index).sum().item() and the asserts on "
                        "(target * target_mask).max() from one run of the body",
        notes="target != ignore_index, .sum().item() (n_non_ignore), data-dependent asserts on target.max(), "
              "torch.gather/masked_select with weights, the kernel writes into the logits, str reduction as a "
              "constexpr, Optional[float] softcap, torch.sum after the launch"),
    Entry("fused_linear_cross_entropy", "fused_linear_cross_entropy_forward", fused_linear_cross_entropy,
          fused_linear_cross_entropy_ref, [
              _flce_case("f32-mean"),
              _flce_case("f32-sum-nobias", bias=False, reduction="sum"),
              _flce_case("f16-mean", f16),
              _flce_case("bf16-mean", bf16),
          ], tol_scale=20,
        trace_runs_body="the trace learns total_n_non_ignore = target_mask.sum().item() from one run of the body",
        notes="a Python loop over chunks, slicing, torch.mm(..., out=...) / @, in-place bias add, "
              "loss_1d[a:b] = ..., .item(), torch.is_grad_enabled(), device-type checks"),
    Entry("kl_div", "kldiv_forward_triton", kl_div, kl_div_ref, [
        _kl_case("f32-batchmean"),
        _kl_case("f32-none", reduction="none"),
        _kl_case("f32-sum-logtarget", reduction="sum", log_target=True),
        _kl_case("f16-mean", f16, reduction="mean"),
        _kl_case("f32-strided", layout=strided),
    ], cpu_skip=FLOAT_ARG_TO.format("eps"),
        notes="str reduction -> constexpr int, output shape chosen by it, output.sum() / BT after the launch"),
    Entry("jsd", "jsd_forward", jsd, jsd_ref, [
        _jsd_case("f32"),
        _jsd_case("f32-forward-kl", beta=0.0),
        _jsd_case("f32-labels", labels=True),
        _jsd_case("f16", f16),
    ], tol_scale=10, trace_runs_body="with labels the trace learns n_non_ignore from one run of the body",
        notes="liger_kernel.backends.dispatch (picks an implementation), _input.clone(), float(BT), "
              "(labels != ignore).sum().item(), float beta as a constexpr, loss.to(dtype)"),
    Entry("tvd", "tv_distance_forward_triton", tvd, tvd_ref, [
        _tvd_case("f32-batchmean"),
        _tvd_case("f32-none", reduction="none"),
        _tvd_case("f32-sum-labels", reduction="sum", labels=True),
        _tvd_case("f16-mean", f16, reduction="mean"),
    ], cpu_skip=FLOAT_ARG_TO.format("scale"),
        trace_runs_body="with labels the trace learns n_non_ignore from one run of the body",
        notes="1.0 / n_non_ignore (float arithmetic on a size), torch.empty(1) placeholder pointer, .item()"),
    Entry("embedding", "LigerEmbeddingFunction.forward", embedding, embedding_ref, [
        _embedding_case("f32"),
        _embedding_case("f16", f16),
        _embedding_case("f32-strided-table", layout=strided),
    ], notes="indices.view(-1), output.view(*shape, -1)"),
    Entry("multi_token_attention", "LigerMultiTokenAttentionFunction.forward", multi_token_attention,
          multi_token_attention_ref, [
              _mta_case("f32-softmax"),
              _mta_case("f32-sparsemax", sparse=True),
              _mta_case("f32-nobias", bias=False),
              _mta_case("f16", f16),
          ], tol_scale=10, exact=False,  # F.conv2d (cuDNN) between the kernels need not be bitwise repeatable
        notes="int(torch.prod(torch.tensor(batch))) on sizes, F.conv2d between kernels, torch.sort (sparse), "
              "_pair(stride)"),
    Entry("mhc_pre", "LigerMHCPreFunction.forward", mhc_pre, mhc_pre_ref, [
        _mhc_case("f32"),
        _mhc_case("f16", f16),
        _mhc_case("f32-strided", layout=strided),
    ], notes="strides as constexprs, h_pre.view(...).to(float32), out.to(dtype).view(...)"),
    Entry("selective_log_softmax", "fused_selective_log_softmax", selective_log_softmax, selective_log_softmax_ref, [
        _sls_case("f32"),
        _sls_case("f32-mask", mask=True),
        _sls_case("f16", f16),
    ], notes="@torch.no_grad, input_ids[:, -L:] (a strided view passed with its strides), None as a pointer, "
             "float temperature as a constexpr"),
    Entry("attn_res", "attn_res_forward", attn_res, attn_res_ref, [
        _attn_res_case("f32"),
        _attn_res_case("f16", f16),
        _attn_res_case("f32-strided", layout=strided),
    ], notes="V.reshape(N, -1, D).contiguous(), float eps as a constexpr, Out.view(list(shape[1:]))"),
    Entry("neighborhood_attention", "fused_neighborhood_attention_forward", neighborhood_attention,
          neighborhood_attention_ref, [
              _na_case("f32"),
              _na_case("f32-dilation2", dilation=2),
              _na_case("f16", f16),
          ], tol_scale=100,  # tl.dot in tf32 on CUDA
        notes="1.0 / math.sqrt(head_dim) (float math on a size), Optional[float] scale, four launches including "
              "Liger's softmax, torch.zeros mask"),
    Entry("int2_matmul", "mm_int8int2.matmul", int2_matmul_op, int2_matmul_ref, [
        _int2_case("int8xint2"),
    ], notes="@triton.autotune with a lambda grid; tl.static_assert on K for every config"),
    # -- Triton tutorials --------------------------------------------------------------------------------
    Entry("add", "01-vector-add add()", tutorial_add, lambda x, y: x + y, [
        _pair_case("f32", (98432,)),
        _pair_case("f16-odd", (1000,), f16),
    ], namespace="triton_tutorial", notes="assert x.device == DEVICE, a lambda grid"),
    Entry("softmax", "02-fused-softmax softmax()", tutorial_softmax, softmax_ref, [
        _one_case("f32", (1823, 781)),
        _one_case("f32-small", (7, 100)),
    ], namespace="triton_tutorial",
        cpu_skip="the wrapper compiles the kernel with warmup() and reads kernel.n_regs / metadata.shared, "
                 "which needs a GPU compile (Triton's interpreter has no registers)",
        trace_needs_gpu="the wrapper compiles the kernel with warmup() while the body runs, so tracing needs a GPU "
                        "(without one Triton finds no active driver)",
        notes="JITFunction.warmup + _init_handles + n_regs/metadata.shared (compiled-kernel metadata decides "
              "the grid), module-level device properties, launching the compiled kernel object"),
    Entry("matmul", "03-matrix-multiplication matmul()", tutorial_matmul, tutorial_matmul_ref, [
        _tut_matmul_case("f16-128x64x96", 128, 64, 96),
        _tut_matmul_case("f16-leaky-relu", 64, 32, 48, "leaky_relu"),
    ], namespace="triton_tutorial", exact=False, tol_scale=3,
        notes="@triton.autotune, lambda grid, str activation as a constexpr"),
    Entry("seeded_dropout", "04-low-memory-dropout seeded_dropout()", tutorial_dropout, None, [
        Case("f32", lambda d: (_Inputs(d).randn(3000), 0.3, 123)),
        Case("f32-other-seed", lambda d: (_Inputs(d).randn(1024), 0.5, 7)),
    ], namespace="triton_tutorial", check=tutorial_dropout_check, notes="int seed and float p arguments"),
    Entry("layer_norm", "05-layer-norm LayerNorm.forward", tutorial_layer_norm,
          lambda x, shape, w, b, eps: layer_norm_ref(x, w, b, eps), [
              _tut_ln_case("f32", (4, 5, 300)),
              _tut_ln_case("f16", (7, 1024), f16),
          ], namespace="triton_tutorial",
        notes="List[int] normalized_shape, x.reshape(-1, n), num_ctas=1, 65536 // x.element_size()"),
]

BY_NAME = {e.qualname: e for e in ENTRIES}
for _e in ENTRIES:
    if _e.namespace == "liger":
        BY_NAME[_e.name] = _e
