"""autograd.Functions of flash-linear-attention (fla-core 0.6.0, module ``fla``) on the framework of
tests/function_corpus.py: each body applies the Function exactly as fla's own public function (or module
forward) does, its argument handling kept; each reference is the same math in plain torch.

What Triton's interpreter (the CPU path) cannot run is said per entry or case (checked on the library's own call
under InterpretLaunches); tests/corpus_fla.py has the forward wrappers of the same kernels.
"""

from dataclasses import replace
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from function_corpus import FunctionCase, FunctionEntry, Inputs, bf16, f16, f32

from fla.modules.activations import (
    elu_p1 as fla_elu_p1,
    logsigmoid as fla_logsigmoid,
    powglu as fla_powglu,
    powglu_linear as fla_powglu_linear,
    sigmoid as fla_sigmoid,
    sigmoidglu as fla_sigmoidglu,
    sigmoidglu_linear as fla_sigmoidglu_linear,
    swiglu as fla_swiglu,
    swiglu_linear as fla_swiglu_linear,
    swish as fla_swish,
)
from fla.modules.causal_conv1d import causal_conv1d as fla_causal_conv1d
from fla.modules.fused_cross_entropy import cross_entropy_loss as fla_cross_entropy_loss
from fla.modules.fused_kl_div import fused_kl_div_loss as fla_fused_kl_div_loss
from fla.modules.fused_linear_cross_entropy import fused_linear_cross_entropy_loss as fla_flce_loss
from fla.modules.grpo import fused_grpo_loss as fla_fused_grpo_loss
from fla.modules.l2warp import l2_warp as fla_l2_warp
from fla.modules.norm.fused_norm_gate import layer_norm_gated as fla_layer_norm_gated
from fla.modules.norm.fused_norm_gate import layer_norm_swish_gate_linear as fla_layer_norm_swish_gate_linear
from fla.modules.norm.l2norm import l2norm as fla_l2norm
from fla.modules.norm.layernorm import group_norm as fla_group_norm
from fla.modules.norm.layernorm import layer_norm_linear as fla_layer_norm_linear
from fla.modules.norm.layernorm_gated import layernorm_fn as fla_layernorm_fn
from fla.modules.rotary import rotary_embedding as fla_rotary_embedding
from fla.modules.token_shift import token_shift as fla_token_shift
from fla.ops.based import parallel_based as fla_parallel_based
from fla.ops.common.gate import fused_beta_sigmoid as fla_fused_beta_sigmoid
from fla.ops.delta_rule import fused_recurrent_delta_rule as fla_fused_recurrent_delta_rule
from fla.ops.hgrn import chunk_hgrn as fla_chunk_hgrn
from fla.ops.hgrn import fused_recurrent_hgrn as fla_fused_recurrent_hgrn
from fla.ops.rwkv6 import fused_recurrent_rwkv6 as fla_fused_recurrent_rwkv6
from fla.ops.simple_gla import chunk_simple_gla as fla_chunk_simple_gla
from fla.ops.simple_gla import fused_recurrent_simple_gla as fla_fused_recurrent_simple_gla
from fla.ops.simple_gla import parallel_simple_gla as fla_parallel_simple_gla
from fla.ops.utils import mean_pooling as fla_mean_pooling
from fla.ops.utils import pack_sequence as fla_pack_sequence
from fla.ops.utils import unpack_sequence as fla_unpack_sequence
from fla.ops.utils.sinkhorn import sinkhorn as fla_sinkhorn

Tensor = torch.Tensor
LIB = "fla-core"

BF16_ON_CPU = "bf16: Triton's interpreter computes bf16 wrongly (torch_tile refuses it on CPU)"
RANGE_INDEX_TO = ("Triton's interpreter runs `for i_t in range(NT)` with Python ints, and the kernel calls "
                  "i_t.to(tl.int64) on the loop index (fla/ops/common/chunk_h.py:97: AttributeError: 'int' object "
                  "has no attribute 'to'); CUDA only")


def _case(id, make, dtype=f32, gpu_only="", tol_scale=1.0):
    return FunctionCase(id, make, dtype, gpu_only or (BF16_ON_CPU if dtype == bf16 else ""), tol_scale)


# -- shared torch math ------------------------------------------------------------------------------------------


def _norm(x, eps, rms=False):
    x = x.float()
    if not rms:
        x = x - x.mean(-1, keepdim=True)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _affine(y, weight, bias):
    if weight is not None:
        y = y * weight.float()
    if bias is not None:
        y = y + bias.float()
    return y


def _linear(y, weight, bias):
    out = y.float() @ weight.float().t()
    return out if bias is None else out + bias.float()


# ================================================================================================
# fla.modules.norm
# ================================================================================================

# -- L2NormFunction: fla.modules.norm.l2norm.l2norm ---------------------------------------------------------------


def l2norm(x: Tensor, eps: float = 1e-6, output_dtype: Optional[torch.dtype] = None) -> Tensor:
    return fla_l2norm(x, eps=eps, output_dtype=output_dtype)


def l2norm_ref(x, eps=1e-6, output_dtype=None):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + eps)).to(output_dtype or x.dtype)


def _l2_case(id, shape, dtype=f32, out=None):
    return _case(id, lambda d: (Inputs(d).randn(*shape, dtype=dtype), 1e-6, out), dtype)


# -- LayerNormFunction: fla.modules.norm.layernorm.group_norm (GroupNorm.forward; layer_norm/rms_norm are G=1) ------


def group_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], residual: Optional[Tensor] = None,
               eps: float = 1e-5, is_rms_norm: bool = False, num_groups: int = 1) -> Tensor:
    return fla_group_norm(x, weight, bias, residual=residual, eps=eps, is_rms_norm=is_rms_norm,
                          num_groups=num_groups)


def group_norm_ref(x, weight, bias, residual=None, eps=1e-5, is_rms_norm=False, num_groups=1):
    s = x.float() if residual is None else x.float() + residual.float()
    D = x.shape[-1]
    y = _norm(s.reshape(*x.shape[:-1], num_groups, D // num_groups), eps, is_rms_norm).reshape(x.shape)
    return _affine(y, weight, bias).to(x.dtype)


def _gn_case(id, shape, groups=1, dtype=f32, *, rms=False, residual=False, bias=True):
    def make(device):
        r = Inputs(device)
        x = r.randn(*shape, dtype=dtype)
        D = shape[-1]
        return (x, r.randn(D, dtype=dtype), r.randn(D, dtype=dtype) if bias else None,
                r.randn(*shape, dtype=dtype) if residual else None, 1e-5, rms, groups)
    return _case(id, make, dtype)


# -- LayerNormLinearFunction: fla.modules.norm.layernorm.layer_norm_linear ----------------------------------------


def layer_norm_linear(x: Tensor, norm_weight: Tensor, norm_bias: Optional[Tensor], linear_weight: Tensor,
                      linear_bias: Optional[Tensor], residual: Optional[Tensor] = None, eps: float = 1e-5,
                      is_rms_norm: bool = False) -> Tensor:
    return fla_layer_norm_linear(x, norm_weight, norm_bias, linear_weight, linear_bias, residual=residual, eps=eps,
                                 is_rms_norm=is_rms_norm)


def layer_norm_linear_ref(x, norm_weight, norm_bias, linear_weight, linear_bias, residual=None, eps=1e-5,
                          is_rms_norm=False):
    s = x.float() if residual is None else x.float() + residual.float()
    y = _affine(_norm(s, eps, is_rms_norm), norm_weight, norm_bias).to(x.dtype)
    return _linear(y, linear_weight, linear_bias).to(x.dtype)


def _lnl_case(id, dtype=f32, *, rms=False, bias=True, residual=False):
    def make(device):
        r = Inputs(device)
        D, Dout = 32, 24
        return (r.randn(2, 5, D, dtype=dtype), r.randn(D, dtype=dtype), r.randn(D, dtype=dtype) if bias else None,
                r.randn(Dout, D, dtype=dtype, scale=0.2), r.randn(Dout, dtype=dtype) if bias else None,
                r.randn(2, 5, D, dtype=dtype) if residual else None, 1e-5, rms)
    return _case(id, make, dtype)


# -- LayerNormGatedFunction: fla.modules.norm.fused_norm_gate.layer_norm_gated ------------------------------------


def _gate(y, g, activation):
    g = g.float()
    return y * (g * torch.sigmoid(g)) if activation in ("swish", "silu") else y * torch.sigmoid(g)


def layer_norm_gated(x: Tensor, g: Tensor, weight: Tensor, bias: Optional[Tensor], activation: str = "swish",
                     residual: Optional[Tensor] = None, eps: float = 1e-6) -> Tensor:
    return fla_layer_norm_gated(x, g, weight, bias, activation=activation, residual=residual, eps=eps)


def layer_norm_gated_ref(x, g, weight, bias, activation="swish", residual=None, eps=1e-6):
    s = x.float() if residual is None else x.float() + residual.float()
    return _gate(_affine(_norm(s, eps), weight, bias), g, activation).to(x.dtype)


def _lng_case(id, shape, dtype=f32, *, activation="swish", bias=True, residual=False):
    def make(device):
        r = Inputs(device)
        x, g = r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype)
        D = shape[-1]
        return (x, g, r.randn(D, dtype=dtype), r.randn(D, dtype=dtype) if bias else None, activation,
                r.randn(*shape, dtype=dtype) if residual else None, 1e-6)
    return _case(id, make, dtype)


# -- LayerNormGatedLinearFunction: fla.modules.norm.fused_norm_gate.layer_norm_swish_gate_linear ------------------


def layer_norm_swish_gate_linear(x: Tensor, g: Tensor, norm_weight: Tensor, norm_bias: Optional[Tensor],
                                 linear_weight: Tensor, linear_bias: Optional[Tensor],
                                 eps: float = 1e-6) -> Tensor:
    return fla_layer_norm_swish_gate_linear(x, g, norm_weight, norm_bias, linear_weight, linear_bias, eps=eps)


def layer_norm_swish_gate_linear_ref(x, g, norm_weight, norm_bias, linear_weight, linear_bias, eps=1e-6):
    y = _gate(_affine(_norm(x, eps), norm_weight, norm_bias), g, "swish").to(x.dtype)
    return _linear(y, linear_weight, linear_bias).to(x.dtype)


def _lngl_case(id, dtype=f32, *, bias=True):
    def make(device):
        r = Inputs(device)
        D, Dout = 32, 16
        return (r.randn(2, 5, D, dtype=dtype), r.randn(2, 5, D, dtype=dtype), r.randn(D, dtype=dtype),
                r.randn(D, dtype=dtype) if bias else None, r.randn(Dout, D, dtype=dtype, scale=0.2),
                r.randn(Dout, dtype=dtype) if bias else None, 1e-6)
    return _case(id, make, dtype)


# -- LayerNormFn: fla.modules.norm.layernorm_gated.layernorm_fn (group-wise norm, SiLU gate before or after) -------


def layernorm_gated(x: Tensor, weight: Tensor, bias: Optional[Tensor], z: Optional[Tensor] = None,
                    eps: float = 1e-6, group_size: Optional[int] = None, norm_before_gate: bool = True,
                    is_rms_norm: bool = False) -> Tensor:
    return fla_layernorm_fn(x, weight, bias, z=z, eps=eps, group_size=group_size,
                            norm_before_gate=norm_before_gate, is_rms_norm=is_rms_norm)


def layernorm_gated_ref(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True,
                        is_rms_norm=False):
    xf = x.float()
    if z is not None and not norm_before_gate:
        xf = xf * F.silu(z.float())
    D = x.shape[-1]
    G = group_size or D
    y = _affine(_norm(xf.reshape(*x.shape[:-1], D // G, G), eps, is_rms_norm).reshape(x.shape), weight, bias)
    if z is not None and norm_before_gate:
        y = y * F.silu(z.float())
    return y.to(x.dtype)


def _lngrp_case(id, shape, dtype=f32, *, gate=True, group_size=None, before=True, bias=True, rms=False):
    def make(device):
        r = Inputs(device)
        x = r.randn(*shape, dtype=dtype)
        D = shape[-1]
        return (x, r.randn(D, dtype=dtype), r.randn(D, dtype=dtype) if bias else None,
                r.randn(*shape, dtype=dtype) if gate else None, 1e-6, group_size, before, rms)
    return _case(id, make, dtype)


# ================================================================================================
# fla.modules.activations
# ================================================================================================


def _act_case(id, shape, dtype=f32, *, n=1, extra=()):
    def make(device):
        r = Inputs(device)
        return (*(r.randn(*shape, dtype=dtype) for _ in range(n)), *extra)
    return _case(id, make, dtype)


def sigmoid(x: Tensor) -> Tensor:
    return fla_sigmoid(x)  # fla.modules.activations.sigmoid = SigmoidFunction.apply


def logsigmoid(x: Tensor, temperature: float = 1.0) -> Tensor:
    return fla_logsigmoid(x, temperature)


def swish(x: Tensor) -> Tensor:
    return fla_swish(x)  # SwishFunction.apply


def elu_p1(x: Tensor) -> Tensor:
    return fla_elu_p1(x)  # ELUPlusOneFunction.apply on CUDA tensors (torch ops on CPU ones)


def swiglu(x: Tensor, y: Tensor) -> Tensor:
    return fla_swiglu(x, y)  # SwiGLUFunction.apply


def swiglu_ref(x, y):
    return (F.silu(x.float()) * y.float()).to(x.dtype)


def sigmoidglu(x: Tensor, y: Tensor) -> Tensor:
    return fla_sigmoidglu(x, y)  # SigmoidGLUFunction.apply


def sigmoidglu_ref(x, y):
    return (torch.sigmoid(x.float()) * y.float()).to(x.dtype)


def powglu(x: Tensor, y: Tensor, power: float = 3.0) -> Tensor:
    return fla_powglu(x, y, power)


def _powgate(x, power):
    xf = x.float()
    pos = xf > 0
    xp = torch.where(pos, xf, torch.ones_like(xf))
    return torch.where(pos, xp.pow(power / (xp.sqrt() + 1)), xf) * torch.sigmoid(xf)


def powglu_ref(x, y, power=3.0):
    return (_powgate(x, power) * y.float()).to(x.dtype)


def swiglu_linear(x: Tensor, y: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    return fla_swiglu_linear(x, y, weight, bias)


def swiglu_linear_ref(x, y, weight, bias):
    return _linear(swiglu_ref(x, y), weight, bias).to(x.dtype)


def sigmoidglu_linear(x: Tensor, y: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    return fla_sigmoidglu_linear(x, y, weight, bias)  # SigmoidGLULinearFunction.apply


def sigmoidglu_linear_ref(x, y, weight, bias):
    return _linear(sigmoidglu_ref(x, y), weight, bias).to(x.dtype)


def powglu_linear(x: Tensor, y: Tensor, weight: Tensor, bias: Optional[Tensor], power: float = 3.0) -> Tensor:
    return fla_powglu_linear(x, y, weight, bias, power)


def powglu_linear_ref(x, y, weight, bias, power=3.0):
    return _linear(powglu_ref(x, y, power), weight, bias).to(x.dtype)


def _glu_linear_case(id, dtype=f32, *, bias=True, extra=()):
    def make(device):
        r = Inputs(device)
        return (r.randn(2, 5, 32, dtype=dtype), r.randn(2, 5, 32, dtype=dtype),
                r.randn(16, 32, dtype=dtype, scale=0.2), r.randn(16, dtype=dtype) if bias else None, *extra)
    return _case(id, make, dtype)


def beta_sigmoid(x: Tensor, scale: float = 1.0) -> Tensor:
    return fla_fused_beta_sigmoid(x, scale)  # BetaSigmoidFunction.apply


def beta_sigmoid_ref(x, scale=1.0):
    return (scale * torch.sigmoid(x.float())).type_as(x.float())


# ================================================================================================
# fla.modules: token shift, causal conv1d, rotary, losses
# ================================================================================================


def token_shift(x: Tensor, cache: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    y, cache_out = fla_token_shift(x, cache=cache, output_cache=True)
    return y, cache_out


def token_shift_ref(x, cache=None):
    prev = torch.zeros_like(x[:, :1]) if cache is None else cache[:, None].to(x.dtype)
    shifted = torch.cat([prev, x[:, :-1]], 1)
    return (shifted.float() - x.float()).to(x.dtype), x[:, -1]


def _token_shift_case(id, shape, dtype=f32, *, cache=False):
    def make(device):
        r = Inputs(device)
        return (r.randn(*shape, dtype=dtype), r.randn(shape[0], shape[2], dtype=dtype) if cache else None)
    return _case(id, make, dtype)


def causal_conv1d(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, residual: Optional[Tensor] = None,
                  initial_state: Optional[Tensor] = None, activation: Optional[str] = None) -> Tuple[Tensor, Tensor]:
    y, final_state = fla_causal_conv1d(x, weight, bias, residual=residual, initial_state=initial_state,
                                       output_final_state=True, activation=activation)
    return y, final_state


def causal_conv1d_ref(x, weight, bias=None, residual=None, initial_state=None, activation=None):
    B, T, D = x.shape
    W = weight.shape[1]
    hist = (initial_state.float().transpose(1, 2) if initial_state is not None
            else x.new_zeros(B, W, D, dtype=torch.float32))
    xx = torch.cat([hist, x.float()], 1)  # position t of x is xx[W + t]
    y = sum(xx[:, 1 + j: 1 + j + T] * weight.float()[:, j] for j in range(W))
    if bias is not None:
        y = y + bias.float()
    if activation in ("swish", "silu"):
        y = F.silu(y)
    if residual is not None:
        y = y + residual.float()
    # fla's backward gives the final state's first column (x at T - W, which no later step reads) no gradient
    final = torch.cat([xx[:, -W:1 - W].detach(), xx[:, 1 - W:]], 1)
    return y.to(x.dtype), final.transpose(1, 2).to(x.dtype)


def _conv_case(id, dtype=f32, *, B=2, T=12, D=16, W=4, bias=True, residual=False, state=False, act="swish"):
    def make(device):
        r = Inputs(device)
        return (r.randn(B, T, D, dtype=dtype), r.randn(D, W, dtype=dtype, scale=0.5),
                r.randn(D, dtype=dtype) if bias else None, r.randn(B, T, D, dtype=dtype) if residual else None,
                r.randn(B, D, W, dtype=dtype) if state else None, act)
    return _case(id, make, dtype)


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False,
                     seqlen_offsets: int = 0) -> Tensor:
    return fla_rotary_embedding(x, cos, sin, interleaved=interleaved, seqlen_offsets=seqlen_offsets)


def rotary_embedding_ref(x, cos, sin, interleaved=False, seqlen_offsets=0):
    T = x.shape[1]
    pos = torch.arange(T, device=x.device) + seqlen_offsets
    c, s = cos.float()[pos][None, :, None], sin.float()[pos][None, :, None]
    R = cos.shape[-1] * 2
    xf = x.float()
    rot, keep = xf[..., :R], xf[..., R:]
    if not interleaved:
        x0, x1 = rot[..., : R // 2], rot[..., R // 2:]
        out = torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)
    else:
        x0, x1 = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)
    return torch.cat([out, keep], -1).to(x.dtype)


def _rotary_case(id, dtype=f32, *, interleaved=False, offset=0, R=16):
    def make(device):
        x = Inputs(device).randn(2, 8, 2, 16, dtype=dtype)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, R, 2, dtype=torch.float32) / R))
        ang = torch.arange(16, dtype=torch.float32)[:, None] * inv_freq
        return (x, ang.cos().to(dtype=dtype, device=device), ang.sin().to(dtype=dtype, device=device), interleaved,
                offset)
    return _case(id, make, dtype)


def cross_entropy(logits: Tensor, target: Tensor, label_smoothing: float = 0.0, logit_scale: float = 1.0,
                  lse_square_scale: float = 0.0, ignore_index: int = -100) -> Tuple[Tensor, Tensor]:
    loss, z_loss = fla_cross_entropy_loss(logits, target, label_smoothing=label_smoothing, logit_scale=logit_scale,
                                          lse_square_scale=lse_square_scale, ignore_index=ignore_index)
    return loss, z_loss


def cross_entropy_ref(logits, target, label_smoothing=0.0, logit_scale=1.0, lse_square_scale=0.0,
                      ignore_index=-100):
    x = logits.float() * logit_scale
    lse = torch.logsumexp(x, -1)
    ignored = target == ignore_index
    loss = -x.gather(1, target.clamp(min=0)[:, None])[:, 0]
    if label_smoothing > 0:
        loss = (1 - label_smoothing) * loss - label_smoothing * x.sum(-1) / x.shape[-1]
    z = lse_square_scale * lse * lse
    loss = loss + lse + z
    return loss.masked_fill(ignored, 0.0), z.masked_fill(ignored, 0.0)


def _ce_case(id, dtype=f32, *, N=8, V=100, smoothing=0.0, scale=1.0, z=0.0):
    def make(device):
        r = Inputs(device)
        logits = r.randn(N, V, dtype=dtype)
        target = r.randint(0, V, (N,))
        target[::3] = -100
        return (logits, target, smoothing, scale, z, -100)
    return _case(id, make, dtype)


def fused_linear_cross_entropy(x: Tensor, target: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                               ignore_index: int = -100, label_smoothing: float = 0.0, logit_scale: float = 1.0,
                               num_chunks: int = 8, reduction: str = "mean") -> Tensor:
    return fla_flce_loss(x, target, weight, bias, ignore_index=ignore_index, label_smoothing=label_smoothing,
                         logit_scale=logit_scale, num_chunks=num_chunks, reduction=reduction)


def fused_linear_cross_entropy_ref(x, target, weight, bias=None, ignore_index=-100, label_smoothing=0.0,
                                   logit_scale=1.0, num_chunks=8, reduction="mean"):
    logits = F.linear(x.float(), weight.float(), None if bias is None else bias.float()) * logit_scale
    loss = F.cross_entropy(logits, target, ignore_index=ignore_index, reduction="sum",
                           label_smoothing=label_smoothing)
    return loss / (target != ignore_index).sum().clamp(min=1) if reduction == "mean" else loss


def _flce_case(id, dtype=f32, *, N=16, H=16, V=40, bias=True, smoothing=0.0, reduction="mean", chunks=8):
    def make(device):
        r = Inputs(device)
        target = r.randint(0, V, (N,))
        target[1::5] = -100
        return (r.randn(N, H, dtype=dtype), target, r.randn(V, H, dtype=dtype, scale=0.3),
                r.randn(V, dtype=dtype) if bias else None, -100, smoothing, 1.0, chunks, reduction)
    return _case(id, make, dtype)


def kl_div(x: Tensor, target_x: Tensor, weight: Tensor, target_weight: Tensor, reduction: str = "batchmean",
           accumulate_grad_in_fp32: bool = True) -> Tensor:
    return fla_fused_kl_div_loss(x, target_x, weight, target_weight, reduction=reduction,
                                 accumulate_grad_in_fp32=accumulate_grad_in_fp32)


def kl_div_ref(x, target_x, weight, target_weight, reduction="batchmean", accumulate_grad_in_fp32=True):
    ls = torch.log_softmax(F.linear(x, weight).float(), -1)
    lt = torch.log_softmax(F.linear(target_x, target_weight).float(), -1)
    loss = (lt.exp() * (lt - ls)).sum()
    return loss / x.shape[0] if reduction == "batchmean" else loss


def _kl_case(id, dtype=f32, *, N=12, H=16, V=40, reduction="batchmean"):
    def make(device):
        r = Inputs(device)
        return (r.randn(N, H, dtype=dtype), r.randn(N, H, dtype=dtype), r.randn(V, H, dtype=dtype, scale=0.3),
                r.randn(V, H, dtype=dtype, scale=0.3), reduction)
    return _case(id, make, dtype)


def grpo_loss(logits: Tensor, ref_logp: Tensor, input_ids: Tensor, advantages: Tensor, beta: float = 0.1,
              completion_mask: Optional[Tensor] = None) -> Tensor:
    return fla_fused_grpo_loss(logits, ref_logp, input_ids, advantages, beta=beta, completion_mask=completion_mask)


def grpo_loss_kl(logits: Tensor, ref_logp: Tensor, input_ids: Tensor, advantages: Tensor, beta: float = 0.1,
                 completion_mask: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    loss, kl = fla_fused_grpo_loss(logits, ref_logp, input_ids, advantages, beta=beta,
                                   completion_mask=completion_mask, save_kl=True)
    return loss, kl


def _grpo_terms(logits, ref_logp, input_ids, advantages, beta, completion_mask):
    L = logits.shape[1] - 1
    logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, input_ids[:, -L:, None])[..., 0]
    diff = ref_logp.float() - logp
    kl = diff.exp() - diff - 1
    # the value of beta * kl - advantage, the gradient of exp(logp - logp.detach()) * advantage with respect to logp
    loss = beta * kl - torch.exp(logp - logp.detach()) * advantages.float()[:, None]
    if completion_mask is not None:
        loss, kl = loss * completion_mask, kl * completion_mask
    return loss, kl


def grpo_loss_ref(logits, ref_logp, input_ids, advantages, beta=0.1, completion_mask=None):
    return _grpo_terms(logits, ref_logp, input_ids, advantages, beta, completion_mask)[0]


def grpo_loss_kl_ref(logits, ref_logp, input_ids, advantages, beta=0.1, completion_mask=None):
    return _grpo_terms(logits, ref_logp, input_ids, advantages, beta, completion_mask)


def _grpo_case(id, *, B=2, L=5, V=40, prompt=3, mask=False, beta=0.1):
    def make(device):
        r = Inputs(device)
        logits = r.randn(B, L + 1, V)
        ref_logp = torch.log_softmax(r.randn(B, V), -1)[:, :L].contiguous()
        input_ids = r.randint(0, V, (B, prompt + L))
        advantages = r.randn(B)
        cm = (r.rand(B, L) > 0.3).to(torch.int32) if mask else None
        return (logits, ref_logp, input_ids, advantages, beta, cm)
    return _case(id, make)


def l2_warp(loss: Tensor, logits: Tensor, l2_penalty_factor: float = 1e-4) -> Tensor:
    return fla_l2_warp(loss, logits, l2_penalty_factor)


def l2_warp_ref(loss, logits, l2_penalty_factor=1e-4):
    # the value is loss; the gradient of logits is the max logit, scaled, at its position
    factor = l2_penalty_factor / (logits.shape[0] * logits.shape[1])
    m = logits.max(-1).values
    return loss + (0.5 * factor * (m * m)).sum() - (0.5 * factor * (m * m)).sum().detach()


def _l2warp_case(id):
    def make(device):
        r = Inputs(device)
        return (r.randn(()), r.randn(2, 3, 16), 1e-2)
    return _case(id, make)


# ================================================================================================
# fla.ops.utils: pooling, pack/unpack, sinkhorn
# ================================================================================================


def mean_pooling(x: Tensor, chunk_size: int) -> Tensor:
    return fla_mean_pooling(x, chunk_size)  # MeanPoolingFunction.apply(x, chunk_size, None)


def mean_pooling_ref(x, chunk_size):
    T = x.shape[1]
    return torch.stack([x[:, s:s + chunk_size].float().mean(1) for s in range(0, T, chunk_size)], 1).to(x.dtype)


def _pool_case(id, dtype=f32, *, B=2, T=20, chunk=8):
    return _case(id, lambda d: (Inputs(d).randn(B, T, 2, 16, dtype=dtype), chunk), dtype)


def _padded_rows(lens, S, padding_side):
    return [(S - n if padding_side == "left" else 0, n) for n in lens]


def pack_sequence(x: Tensor, cu_seqlens: Tensor, padding_side: str = "left") -> Tensor:
    return fla_pack_sequence(x, cu_seqlens, padding_side)


def pack_sequence_ref(x, cu_seqlens, padding_side="left"):
    lens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    return torch.cat([x[b, s:s + n] for b, (s, n) in enumerate(_padded_rows(lens, x.shape[1], padding_side))])


def _pack_case(id, *, side="left"):
    def make(device):
        return (Inputs(device).randn(3, 6, 2, 8), torch.tensor([0, 4, 10, 12], device=device), side)
    return _case(id, make)


def unpack_sequence(x: Tensor, cu_seqlens: Tensor, padding_side: str, desired_shape: list[int]) -> Tensor:
    return fla_unpack_sequence(x, cu_seqlens, padding_side, torch.Size(desired_shape))


def unpack_sequence_ref(x, cu_seqlens, padding_side, desired_shape):
    lens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    rows = []
    for b, (s, n) in enumerate(_padded_rows(lens, desired_shape[1], padding_side)):
        a = int(cu_seqlens[b])
        before = x.new_zeros(s, *desired_shape[2:])
        after = x.new_zeros(desired_shape[1] - s - n, *desired_shape[2:])
        rows.append(torch.cat([before, x[a:a + n], after]))
    return torch.stack(rows)


def _unpack_case(id, *, side="left"):
    def make(device):
        return (Inputs(device).randn(12, 2, 8), torch.tensor([0, 4, 10, 12], device=device), side, [3, 6, 2, 8])
    return _case(id, make)


def sinkhorn(logits: Tensor, num_iters: int = 20) -> Tensor:
    return fla_sinkhorn(logits, num_iters)


def sinkhorn_ref(logits, num_iters=20):
    x = logits.float()
    x = x - x.amax(-2, keepdim=True)
    for _ in range(num_iters):
        x = x - torch.logsumexp(x, -2, keepdim=True)
        x = x - torch.logsumexp(x, -1, keepdim=True)
    return x.exp()


def _sinkhorn_case(id, N=4, iters=20):
    return _case(id, lambda d: (Inputs(d).randn(3, N, N), iters))


# ================================================================================================
# fla.ops: linear-attention recurrences
# ================================================================================================


def _gated_recurrence(q, k, v, scale, gk=None, h0=None, reverse=False, u=None):
    """S_t = diag(exp(gk_t)) S_{t-1} + k_t v_t^T, o_t = scale q_t^T S_t, per head ([K, V] states); with a bonus u
    (RWKV-6): o_t = scale q_t^T (S_{t-1} + (u * k_t) v_t^T)."""
    B, T, H, K = q.shape
    qf, kf, vf = q.float() * scale, k.float(), v.float()
    S = h0.float() if h0 is not None else torch.zeros(B, H, K, v.shape[-1], device=q.device)
    outs = [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        kv = kf[:, t, :, :, None] * vf[:, t, :, None, :]
        if u is not None:
            outs[t] = (qf[:, t, :, :, None] * (S + u.float()[:, :, None] * kv)).sum(-2)
        if gk is not None:
            S = S * gk[:, t].float().exp()[..., None]
        S = S + kv
        if u is None:
            outs[t] = (qf[:, t, :, :, None] * S).sum(-2)
    return torch.stack(outs, 1), S


def _decay(r, *shape, dtype=f32):
    """Log decays in (-inf, 0): logsigmoid of a shifted normal (mostly close to 0, as trained gates are)."""
    return F.logsigmoid(r.randn(*shape) + 2.0).to(dtype=dtype)


def fused_recurrent_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Optional[Tensor] = None,
                               scale: Optional[float] = None, reverse: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_fused_recurrent_simple_gla(q, k, v, g, scale=scale, initial_state=initial_state,
                                           output_final_state=True, reverse=reverse)
    return o, ht


def simple_gla_ref(q, k, v, g, initial_state=None, scale=None, reverse=False):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, ht = _gated_recurrence(q, k, v, scale, gk=g[..., None].expand(q.shape), h0=initial_state, reverse=reverse)
    return o.to(v.dtype), ht


def _simple_gla_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16, h0=True, scale=None, reverse=False):
    def make(device):
        r = Inputs(device)
        q, k, v = (r.randn(B, T, H, D, dtype=dtype) for D in (K, K, V))
        g = _decay(r, B, T, H).to(device)
        return (q, k, v, g, r.randn(B, H, K, V) if h0 else None, scale, reverse)
    return _case(id, make, dtype, tol_scale=5)


def chunk_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Optional[Tensor] = None,
                     scale: Optional[float] = None, reverse: bool = False) -> Tuple[Tensor, Tensor]:
    assert not reverse  # the chunked kernel has no reverse mode: the recurrent entry's arguments
    o, ht = fla_chunk_simple_gla(q, k, v, g, scale=scale, initial_state=initial_state, output_final_state=True)
    return o, ht


def parallel_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Optional[Tensor], scale: Optional[float] = None) -> Tensor:
    o, attn = fla_parallel_simple_gla(q, k, v, g, scale=scale)
    return o


def parallel_simple_gla_ref(q, k, v, g, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    gk = g[..., None].expand(q.shape) if g is not None else None
    return _gated_recurrence(q, k, v, scale, gk=gk)[0].to(v.dtype)


def _parallel_case(id, dtype=f32, *, B=1, T=16, H=2, K=16, V=16, gate=True, scale=None):
    def make(device):
        r = Inputs(device)
        q, k, v = (r.randn(B, T, H, D, dtype=dtype) for D in (K, K, V))
        return (q, k, v, _decay(r, B, T, H).to(device) if gate else None, scale)
    return _case(id, make, dtype, tol_scale=10)


def fused_recurrent_hgrn(x: Tensor, g: Tensor, initial_state: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_fused_recurrent_hgrn(x, g, initial_state=initial_state, output_final_state=True)
    return o, ht


def chunk_hgrn(x: Tensor, g: Tensor, initial_state: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_chunk_hgrn(x, g, initial_state=initial_state, output_final_state=True)
    return o, ht


def hgrn_ref(x, g, initial_state=None):
    B, T, D = x.shape
    h = initial_state.float() if initial_state is not None else x.new_zeros(B, D, dtype=torch.float32)
    outs = []
    for t in range(T):
        h = g[:, t].float().exp() * h + x[:, t].float()
        outs.append(h)
    return torch.stack(outs, 1).to(x.dtype), h


def _hgrn_case(id, dtype=f32, *, B=2, T=20, D=24, h0=True):
    def make(device):
        r = Inputs(device)
        return (r.randn(B, T, D, dtype=dtype), _decay(r, B, T, D, dtype=dtype).to(device),
                r.randn(B, D) if h0 else None)
    return _case(id, make, dtype, tol_scale=5)


def parallel_based(q: Tensor, k: Tensor, v: Tensor, scale: Optional[float] = None, use_norm: bool = True) -> Tensor:
    return fla_parallel_based(q, k, v, scale=scale, use_norm=use_norm)


def parallel_based_ref(q, k, v, scale=None, use_norm=True):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    s = (qf * scale) @ kf.transpose(-1, -2)
    T = q.shape[1]
    attn = (1 + s + 0.5 * s * s).masked_fill(~torch.ones(T, T, dtype=torch.bool, device=q.device).tril(), 0)
    o = attn @ vf
    if use_norm:
        o = o / (attn.sum(-1, keepdim=True) + 1e-6)
    return o.transpose(1, 2).to(q.dtype)


def _based_case(id, dtype=f32, *, B=1, T=16, H=2, K=16, V=16, norm=True):
    def make(device):
        r = Inputs(device)
        q, k, v = (r.randn(B, T, H, D, dtype=dtype) for D in (K, K, V))
        return (q, k, v, None, norm)
    return _case(id, make, dtype, tol_scale=10)


def fused_recurrent_delta_rule(q: Tensor, k: Tensor, v: Tensor, beta: Tensor, initial_state: Optional[Tensor] = None,
                               scale: Optional[float] = None,
                               use_qk_l2norm_in_kernel: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_fused_recurrent_delta_rule(q, k, v, beta, scale=scale, initial_state=initial_state,
                                           output_final_state=True, use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel)
    return o, ht


def delta_rule_ref(q, k, v, beta, initial_state=None, scale=None, use_qk_l2norm_in_kernel=False):
    """S <- S + k_t (beta_t (v_t - S^T k_t))^T; o_t = scale S^T q_t."""
    B, T, H, K = q.shape
    scale = K ** -0.5 if scale is None else scale
    qf, kf = q.float(), k.float()
    if use_qk_l2norm_in_kernel:
        qf = qf * torch.rsqrt((qf * qf).sum(-1, keepdim=True) + 1e-6)
        kf = kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)
    qf = qf * scale
    vf, bf = v.float(), beta.float()
    S = initial_state.float() if initial_state is not None else torch.zeros(B, H, K, v.shape[-1], device=q.device)
    outs = []
    for t in range(T):
        upd = bf[:, t, :, None] * (vf[:, t] - (S * kf[:, t, :, :, None]).sum(-2))
        S = S + kf[:, t, :, :, None] * upd[:, :, None, :]
        outs.append((S * qf[:, t, :, :, None]).sum(-2))
    return torch.stack(outs, 1).to(v.dtype), S


def _delta_case(id, dtype=f32, *, B=2, T=10, H=2, K=16, V=16, h0=True, scale=None, l2=False):
    def make(device):
        r = Inputs(device)
        q, k, v = (r.randn(B, T, H, D, dtype=dtype) for D in (K, K, V))
        if not l2:  # the delta rule needs unit keys (the kernel normalizes them when asked)
            q, k = F.normalize(q.float(), dim=-1).to(dtype), F.normalize(k.float(), dim=-1).to(dtype)
        return (q, k, v, r.rand(B, T, H, dtype=dtype), r.randn(B, H, K, V) if h0 else None, scale, l2)
    return _case(id, make, dtype, tol_scale=5)


def fused_recurrent_rwkv6(r: Tensor, k: Tensor, v: Tensor, w: Tensor, u: Tensor,
                          initial_state: Optional[Tensor] = None, scale: Optional[float] = None,
                          reverse: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_fused_recurrent_rwkv6(r, k, v, w, u, scale=scale, initial_state=initial_state,
                                      output_final_state=True, reverse=reverse)
    return o, ht


def rwkv6_ref(r, k, v, w, u, initial_state=None, scale=None, reverse=False):
    scale = r.shape[-1] ** -0.5 if scale is None else scale
    o, ht = _gated_recurrence(r, k, v, scale, gk=w, h0=initial_state, reverse=reverse, u=u)
    return o.to(v.dtype), ht.detach()  # FusedRecurrentRWKV6Function.backward ignores dht (the final state's gradient)


def _rwkv6_case(id, dtype=f32, *, B=2, T=10, H=2, K=16, V=16, h0=True, scale=None, reverse=False):
    def make(device):
        rr = Inputs(device)
        q, k, v = (rr.randn(B, T, H, D, dtype=dtype) for D in (K, K, V))
        w = _decay(rr, B, T, H, K, dtype=dtype).to(device)
        return (q, k, v, w, rr.randn(H, K, dtype=dtype, scale=0.5), rr.randn(B, H, K, V) if h0 else None, scale,
                reverse)
    return _case(id, make, dtype, tol_scale=5)


# ================================================================================================
# The entries
# ================================================================================================


def _entry(name, function, body, reference, cases, grads, **kw):
    return FunctionEntry(f"fla_{name}", LIB, function, body, reference, cases, grads, **kw)


ENTRIES = [
    # -- norms -------------------------------------------------------------------------------------------------
    _entry("l2norm", "fla.modules.norm.l2norm.L2NormFunction", l2norm, l2norm_ref, [
        _l2_case("f32", (2, 5, 32)),
        _l2_case("f16-out-f32", (6, 64), f16, out=f32),
        _l2_case("f32-row-kernel", (2, 600)),
    ], grads=(0,)),
    _entry("group_norm", "fla.modules.norm.layernorm.LayerNormFunction", group_norm, group_norm_ref, [
        _gn_case("f32-layer-norm", (2, 4, 32)),
        _gn_case("f32-rms-residual", (6, 48), rms=True, residual=True),
        _gn_case("f16-4groups", (4, 64), 4, f16),
    ], grads=(0, 1, 2)),
    _entry("layer_norm_linear", "fla.modules.norm.layernorm.LayerNormLinearFunction", layer_norm_linear,
           layer_norm_linear_ref, [
               _lnl_case("f32"),
               _lnl_case("f32-rms-residual", rms=True, residual=True),
               _lnl_case("f16", f16),
           ], grads=(0, 1, 2, 3, 4), tol_scale=3),
    _entry("layer_norm_gated", "fla.modules.norm.fused_norm_gate.LayerNormGatedFunction", layer_norm_gated,
           layer_norm_gated_ref, [
               _lng_case("f32-swish", (2, 5, 32)),
               _lng_case("f32-sigmoid-residual", (6, 48), activation="sigmoid", residual=True),
               _lng_case("f16", (4, 64), f16),
           ], grads=(0, 1, 2, 3)),
    _entry("layer_norm_swish_gate_linear", "fla.modules.norm.fused_norm_gate.LayerNormGatedLinearFunction",
           layer_norm_swish_gate_linear, layer_norm_swish_gate_linear_ref, [
               _lngl_case("f32"),
               _lngl_case("f16", f16),
           ], grads=(0, 1, 2, 3, 4, 5), tol_scale=3),
    _entry("layernorm_gated", "fla.modules.norm.layernorm_gated.LayerNormFn", layernorm_gated, layernorm_gated_ref, [
        _lngrp_case("f32-gate-after-norm", (2, 5, 32)),
        _lngrp_case("f32-rms-gate-before-groups", (6, 48), group_size=16, before=False, rms=True),
        _lngrp_case("f16-groups", (4, 64), f16, group_size=32),
    ], grads=(0, 1, 2, 3)),
    # -- activations -------------------------------------------------------------------------------------------
    _entry("sigmoid", "fla.modules.activations.ops.SigmoidFunction", sigmoid,
           lambda x: torch.sigmoid(x.float()).to(x.dtype), [
               _act_case("f32", (2, 5, 32)),
               _act_case("f16", (7, 50), f16),
           ], grads=(0,)),
    _entry("logsigmoid", "fla.modules.activations.ops.LogSigmoidFunction", logsigmoid,
           lambda x, temperature=1.0: (F.logsigmoid(x.float()) / temperature).to(x.dtype), [
               _act_case("f32", (2, 5, 32), extra=(1.0,)),
               _act_case("f16-temperature", (7, 50), f16, extra=(2.0,)),
           ], grads=(0,)),
    _entry("swish", "fla.modules.activations.ops.SwishFunction", swish, lambda x: F.silu(x.float()).to(x.dtype), [
        _act_case("f32", (2, 5, 32)),
        _act_case("f16", (7, 50), f16),
    ], grads=(0,)),
    _entry("elu_p1", "fla.modules.activations.ops.ELUPlusOneFunction", elu_p1,
           lambda x: (F.elu(x.float()) + 1).to(x.dtype), [
               _act_case("f32", (2, 5, 32)),
               _act_case("f16", (7, 50), f16),
           ], grads=(0,),
           gpu_only="fla's elu_p1 applies the Function only to CUDA tensors (on CPU it computes in torch), and "
                    "Triton's interpreter does not implement libdevice.exp (both kernels call it: the call returns "
                    "None there); CUDA only"),
    _entry("swiglu", "fla.modules.activations.ops.SwiGLUFunction", swiglu, swiglu_ref, [
        _act_case("f32", (2, 5, 32), n=2),
        _act_case("f16", (7, 50), f16, n=2),
        _act_case("bf16", (4, 64), bf16, n=2),
    ], grads=(0, 1)),
    _entry("sigmoidglu", "fla.modules.activations.ops.SigmoidGLUFunction", sigmoidglu, sigmoidglu_ref, [
        _act_case("f32", (2, 5, 32), n=2),
        _act_case("f16", (7, 50), f16, n=2),
    ], grads=(0, 1)),
    _entry("powglu", "fla.modules.activations.ops.PowGLUFunction", powglu, powglu_ref, [
        _act_case("f32", (2, 5, 32), n=2, extra=(3.0,)),
        _act_case("f16-power2", (7, 50), f16, n=2, extra=(2.0,)),
    ], grads=(0, 1)),
    _entry("swiglu_linear", "fla.modules.activations.ops.SwiGLULinearFunction", swiglu_linear, swiglu_linear_ref, [
        _glu_linear_case("f32"),
        _glu_linear_case("f16", f16),
    ], grads=(0, 1, 2, 3), tol_scale=3),
    _entry("sigmoidglu_linear", "fla.modules.activations.ops.SigmoidGLULinearFunction", sigmoidglu_linear,
           sigmoidglu_linear_ref, [
               _glu_linear_case("f32"),
               _glu_linear_case("f16", f16),
           ], grads=(0, 1, 2, 3), tol_scale=3),
    _entry("powglu_linear", "fla.modules.activations.ops.PowGLULinearFunction", powglu_linear, powglu_linear_ref, [
        _glu_linear_case("f32", extra=(3.0,)),
        _glu_linear_case("f16-power2", f16, extra=(2.0,)),
    ], grads=(0, 1, 2, 3), tol_scale=3),
    _entry("beta_sigmoid", "fla.ops.common.gate.BetaSigmoidFunction", beta_sigmoid, beta_sigmoid_ref, [
        _act_case("f32", (2, 12, 4), extra=(1.0,)),
        _act_case("f16-scale2", (2, 12, 4), f16, extra=(2.0,)),
    ], grads=(0,)),
    # -- token shift, conv, rotary -------------------------------------------------------------------------------
    _entry("token_shift", "fla.modules.token_shift.TokenShift", token_shift, token_shift_ref, [
        _token_shift_case("f32", (2, 8, 32)),
        _token_shift_case("f32-cache", (2, 8, 32), cache=True),
        _token_shift_case("f16", (3, 5, 48), f16),
    ], grads=(0,)),
    _entry("causal_conv1d", "fla.modules.causal_conv1d.ops.CausalConv1dFunction", causal_conv1d, causal_conv1d_ref, [
        _conv_case("f32-swish"),
        _conv_case("f32-state-residual", state=True, residual=True, act=None),
        _conv_case("f16", f16),
    ], grads=(0, 1, 2), tol_scale=3),
    _entry("rotary_embedding", "fla.modules.rotary.ops.RotaryEmbeddingFunction", rotary_embedding,
           rotary_embedding_ref, [
               _rotary_case("f32"),
               _rotary_case("f32-interleaved-partial-offset", interleaved=True, offset=3, R=8),
               _rotary_case("f16", f16),
           ], grads=(0,)),
    # -- losses ------------------------------------------------------------------------------------------------
    _entry("cross_entropy", "fla.modules.fused_cross_entropy.ops.FusedCrossEntropyFunction", cross_entropy,
           cross_entropy_ref, [
               _ce_case("f32"),
               _ce_case("f32-smoothing-zloss-scale", smoothing=0.1, z=1e-3, scale=0.5),
               _ce_case("f16", f16),
           ], grads=(0,), tol_scale=10),
    _entry("fused_linear_cross_entropy", "fla.modules.fused_linear_cross_entropy.ops.FusedLinearCrossEntropyFunction",
           fused_linear_cross_entropy, fused_linear_cross_entropy_ref, [
               _flce_case("f32-mean"),
               _flce_case("f32-sum-smoothing-2chunks", reduction="sum", smoothing=0.1, chunks=2),
           ], grads=(0, 2, 3), tol_scale=20),
    _entry("kl_div", "fla.modules.fused_kl_div.ops.FusedKLDivLossFunction", kl_div, kl_div_ref, [
        _kl_case("f32"),
        _kl_case("f16", f16),
    ], grads=(0, 2), tol_scale=10,
        python_backward="FusedKLDivLossFunction.forward reads ctx.needs_input_grad (use_dx/use_dw: it precomputes "
                        "only the gradients asked for), and fused_kl_div_loss passes torch.is_grad_enabled() and "
                        "reads target_x.requires_grad"),
    _entry("grpo_loss", "fla.modules.grpo.ops.GrpoLoss", grpo_loss, grpo_loss_ref, [
        _grpo_case("f32"),
        _grpo_case("f32-mask-beta", mask=True, beta=0.2),
    ], grads=(0,), tol_scale=10),
    _entry("l2_warp", "fla.modules.l2warp.L2Wrap", l2_warp, l2_warp_ref, [
        _l2warp_case("f32"),
    ], grads=(0, 1),
        python_backward="L2Wrap.forward returns its input `loss` itself (autograd makes the output a view of it)"),
    # -- fla.ops.utils ------------------------------------------------------------------------------------------
    _entry("mean_pooling", "fla.ops.utils.pooling.MeanPoolingFunction", mean_pooling, mean_pooling_ref, [
        _pool_case("f32"),
        _pool_case("f16", f16, T=16),
    ], grads=(0,)),
    _entry("pack_sequence", "fla.ops.utils.pack.PackSequenceFunction", pack_sequence, pack_sequence_ref, [
        _pack_case("f32-left"),
        _pack_case("f32-right", side="right"),
    ], grads=(0,), python_backward_off_cuda="the Function's output sizes are read from cu_seqlens (Read steps): "
                                            "the C++ node keeps them, the Python path cannot recompute them"),
    _entry("unpack_sequence", "fla.ops.utils.pack.UnpackSequenceFunction", unpack_sequence, unpack_sequence_ref, [
        _unpack_case("f32-left"),
        _unpack_case("f32-right", side="right"),
    ], grads=(0,)),
    _entry("sinkhorn", "fla.ops.utils.sinkhorn.ops.SinkhornFunction", sinkhorn, sinkhorn_ref, [
        _sinkhorn_case("f32-4x4"),
        _sinkhorn_case("f32-3x3-5iters", N=3, iters=5),
    ], grads=(0,), tol_scale=10,
        gpu_only="fla's sinkhorn raises ValueError('Sinkhorn kernels require NVIDIA CUDA tensors') for CPU tensors; "
                 "CUDA only"),
    # -- fla.ops: attention recurrences ---------------------------------------------------------------------------
    _entry("fused_recurrent_simple_gla", "fla.ops.common.fused_recurrent.FusedRecurrentFunction",
           fused_recurrent_simple_gla, simple_gla_ref, [
               _simple_gla_case("f32"),
               _simple_gla_case("f32-reverse-scale", h0=False, scale=0.5, reverse=True),
           ], grads=(0, 1, 2, 3)),
    _entry("chunk_simple_gla", "fla.ops.simple_gla.chunk.ChunkSimpleGLAFunction", chunk_simple_gla, simple_gla_ref, [
        _simple_gla_case("f32", T=40),
        _simple_gla_case("bf16", bf16, T=40),
    ], grads=(0, 1, 2, 3, 4), tol_scale=4, gpu_only=RANGE_INDEX_TO),
    _entry("parallel_simple_gla", "fla.ops.simple_gla.parallel.ParallelSimpleGLAFunction", parallel_simple_gla,
           parallel_simple_gla_ref, [
               _parallel_case("f32"),
               _parallel_case("f32-nogate-scale", gate=False, scale=0.3),
           ], grads=(0, 1, 2)),
    _entry("fused_recurrent_hgrn", "fla.ops.hgrn.fused_recurrent.FusedRecurrentHGRNFunction", fused_recurrent_hgrn,
           hgrn_ref, [
               _hgrn_case("f32"),
               _hgrn_case("f32-noh0", h0=False),
           ], grads=(0, 1)),
    _entry("chunk_hgrn", "fla.ops.hgrn.chunk.ChunkHGRNFunction", chunk_hgrn, hgrn_ref, [
        _hgrn_case("f32", T=40),
        _hgrn_case("f32-noh0", T=40, h0=False),
    ], grads=(0, 1),
        gpu_only="Triton's interpreter runs the backward's `for i_t in range(...)` with Python ints, and "
                 "chunk_hgrn_bwd_kernel_o calls (i_t * BT).to(tl.int64) on the loop index (fla/ops/hgrn/chunk.py:202: "
                 "AttributeError: 'int' object has no attribute 'to'); CUDA only"),
    _entry("parallel_based", "fla.ops.based.parallel.ParallelBasedFunction", parallel_based, parallel_based_ref, [
        replace(_based_case("f32"), python_backward="parallel_based divides the Function's output by its "
                                                    "normalizer (o / (z + eps)): arithmetic on the gradient's path"),
        _based_case("f32-nonorm", norm=False),
    ], grads=(0, 1, 2)),
    _entry("fused_recurrent_delta_rule", "fla.ops.delta_rule.fused_recurrent.FusedRecurrentFunction",
           fused_recurrent_delta_rule, delta_rule_ref, [
               _delta_case("f32"),
               _delta_case("f32-l2norm-in-kernel", l2=True, scale=0.5),
           ], grads=(0, 1, 2, 3, 4)),
    _entry("fused_recurrent_rwkv6", "fla.ops.rwkv6.fused_recurrent.FusedRecurrentRWKV6Function",
           fused_recurrent_rwkv6, rwkv6_ref, [
               _rwkv6_case("f32"),
               # no reverse=True case: there the library's own dw (fused_recurrent_rwkv6_bwd_kernel_dw, whose q
               # offset is o_q = i_t * BT + 1 + o_i in both directions) differs from the reversed recurrence's
               _rwkv6_case("f32-noh0-scale", h0=False, scale=0.5),
           ], grads=(0, 1, 2, 3, 4)),
]
