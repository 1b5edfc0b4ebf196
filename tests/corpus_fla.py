"""A corpus of real host wrappers from flash-linear-attention's kernels (fla-core 0.6.0, module ``fla``), called
unchanged from torch_tile op bodies.

Install: ``pip install --no-deps fla-core==0.6.0 einops==0.8.1`` (fla imports einops at module level; nothing
else it needs beyond torch and Triton). Without fla this module is skipped (``pytest.importorskip``).

Each entry is one torch_tile op whose body calls fla exactly as its users do: the public functional API (most of
which is a ``torch.autograd.Function.apply``: ``layer_norm``, ``swiglu``, ``chunk_simple_gla``...) or the plain
forward wrappers those Functions call (``layer_norm_fwd``, ``l2norm_fwd``, ``cross_entropy_fwd``...), with the
wrapper's non-tensor parameters as typed op arguments and its non-tensor extras dropped from the outputs. fla's
decorators stay as they are: ``@triton.autotune`` and fla's own ``CachedAutotuner`` (``fla_cache_autotune``),
``@triton.heuristics``, ``@input_guard`` (``.contiguous()`` of every tensor argument, a device context),
``@dispatch`` (a backend registry behind ``torch.compiler.disable``), ``functools.cache``'d device queries and
``@tensor_cache``'d index helpers.

An entry gives the body, the cases (small seeded inputs: f32 and f16, bf16 as GPU-only cases, non-contiguous
layouts where the wrapper handles them) and an independent torch reference (recurrences written out step by
step, fp32 math). The chunked attention kernels (``chunk_*``) cannot run under Triton's interpreter (their loops
call ``.to()`` on a ``range`` index, which the interpreter leaves a Python int): those entries are ``cpu_skip``.
"""

from typing import List, Optional, Tuple

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("fla", reason="needs fla-core==0.6.0 (pip install --no-deps fla-core==0.6.0 einops==0.8.1)")

import fla.ops as fla_ops  # noqa: E402
from fla.modules.activations import logsigmoid as fla_logsigmoid  # noqa: E402
from fla.modules.activations import powglu as fla_powglu  # noqa: E402
from fla.modules.activations import sigmoid as fla_sigmoid  # noqa: E402
from fla.modules.activations import sigmoidglu as fla_sigmoidglu  # noqa: E402
from fla.modules.activations import swiglu as fla_swiglu  # noqa: E402
from fla.modules.activations import swiglu_linear as fla_swiglu_linear  # noqa: E402
from fla.modules.activations import swish as fla_swish  # noqa: E402
from fla.modules.activations.ops import elu_p1_fwd, swiglu_fwdbwd  # noqa: E402
from fla.modules.causal_conv1d import causal_conv1d as fla_causal_conv1d  # noqa: E402
from fla.modules.causal_conv1d.ops import causal_conv1d_update as fla_causal_conv1d_update  # noqa: E402
from fla.modules.fused_bitlinear import bit_linear as fla_bit_linear  # noqa: E402
from fla.modules.fused_cross_entropy import cross_entropy_fwd, cross_entropy_loss  # noqa: E402
from fla.modules.fused_kl_div import fused_kl_div_loss  # noqa: E402
from fla.modules.fused_linear_cross_entropy import (  # noqa: E402
    fused_linear_cross_entropy_fwd,
    fused_linear_cross_entropy_loss,
)
from fla.modules.norm.fused_norm_gate import layer_norm_gated as fla_layer_norm_gated  # noqa: E402
from fla.modules.norm.fused_norm_gate import layer_norm_gated_fwd  # noqa: E402
from fla.modules.norm.fused_norm_gate import rms_norm_gated as fla_rms_norm_gated  # noqa: E402
from fla.modules.norm.l2norm import l2norm as fla_l2norm  # noqa: E402
from fla.modules.norm.l2norm import l2norm_fwd  # noqa: E402
from fla.modules.norm.layernorm import group_norm as fla_group_norm  # noqa: E402
from fla.modules.norm.layernorm import layer_norm as fla_layer_norm  # noqa: E402
from fla.modules.norm.layernorm import layer_norm_fwd  # noqa: E402
from fla.modules.norm.layernorm import layer_norm_linear as fla_layer_norm_linear  # noqa: E402
from fla.modules.norm.layernorm import rms_norm as fla_rms_norm  # noqa: E402
from fla.modules.norm.layernorm_gated import layernorm_fn, rmsnorm_fn  # noqa: E402
from fla.modules.rotary import rotary_embedding as fla_rotary_embedding  # noqa: E402
from fla.modules.rotary.ops import rotary_embedding_fwdbwd  # noqa: E402
from fla.modules.token_shift import token_shift as fla_token_shift  # noqa: E402
from fla.ops.hgrn.chunk import chunk_hgrn as fla_chunk_hgrn  # noqa: E402
from fla.ops.utils import (  # noqa: E402
    addmm as fla_addmm,
    chunk_global_cumsum,
    chunk_local_cumsum,
    logsumexp_fwd,
    matmul as fla_matmul,
    mean_pooling as fla_mean_pooling,
    pack_sequence as fla_pack_sequence,
    softmax_fwd,
    solve_tril as fla_solve_tril,
    unpack_sequence as fla_unpack_sequence,
)

from wrapper_corpus import Case, Entry, Inputs, Tensor, bf16, f16, f32, strided  # noqa: E402

VARLEN_BY_DATA = "the trace learns the sequence lengths (cu_seqlens -> prepare_chunk_indices) from one run of the body"

NS = "fla"


def _no_bf16_on_cpu(dtype) -> str:
    return "bf16: Triton's interpreter computes bf16 wrongly (torch_tile refuses it on CPU)" if dtype == bf16 else ""


def _case(id, make, dtype=f32, gpu_only=""):
    return Case(id, make, dtype, gpu_only or _no_bf16_on_cpu(dtype))


def _row_slice(t: Tensor) -> Tensor:
    """The same values as rows of a wider buffer: last dimension contiguous, row stride larger than the row."""
    wide = torch.cat([t, torch.zeros_like(t[..., :3])], dim=-1)
    return wide[..., : t.shape[-1]]


# Why Triton's interpreter (3.8; the CPU path) cannot run fla's chunked attention kernels: checked with Triton's
# own TRITON_INTERPRET=1 on the library's call too (the autotuner's timing stubbed, as CPU has no benchmarker).
RANGE_INDEX_TO = ("Triton's interpreter runs `for i_t in range(NT)` with Python ints, and the kernel calls "
                  "i_t.to(tl.int64) on the loop index ({}: AttributeError: 'int' object has no attribute 'to'); "
                  "CUDA only")
LIBDEVICE_TANH = ("Triton's interpreter does not implement libdevice.tanh (fla.ops.utils.op.tanh): the call "
                  "returns None there (TypeError: unsupported operand type(s) for *: 'float' and 'NoneType'); "
                  "CUDA only")


# ================================================================================================
# fla.modules.norm
# ================================================================================================

# -- layer_norm / rms_norm / group_norm: LayerNormFunction.apply -------------------------------------------------


def layer_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], residual: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    return fla_layer_norm(x, weight, bias, residual=residual, eps=eps)


def _ln(x: Tensor, eps: float, rms: bool = False) -> Tensor:
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


def layer_norm_ref(x, weight, bias, residual=None, eps=1e-5):
    s = x.float() if residual is None else x.float() + residual.float()
    return _affine(_ln(s, eps), weight, bias).to(x.dtype)


def _ln_case(id, shape, dtype=f32, *, affine=True, residual=False, layout=None):
    def make(device):
        r = Inputs(device)
        x = r.randn(*shape, dtype=dtype)
        D = shape[-1]
        w, b = (r.randn(D, dtype=dtype), r.randn(D, dtype=dtype)) if affine else (None, None)
        res = r.randn(*shape, dtype=dtype) if residual else None
        return (layout(x) if layout else x, w, b, res, 1e-5)
    return _case(id, make, dtype)


def rms_norm_prenorm(x: Tensor, weight: Tensor, residual: Optional[Tensor], eps: float = 1e-5,
                     residual_in_fp32: bool = False) -> Tuple[Tensor, Tensor]:
    y, residual_out = fla_rms_norm(x, weight, None, residual=residual, eps=eps, prenorm=True,
                                   residual_in_fp32=residual_in_fp32)
    return y, residual_out


def rms_norm_prenorm_ref(x, weight, residual, eps=1e-5, residual_in_fp32=False):
    s = x.float() if residual is None else x.float() + residual.float()
    res_dtype = residual.dtype if residual is not None else (f32 if residual_in_fp32 else x.dtype)
    return _affine(_ln(s, eps, rms=True), weight, None).to(x.dtype), s.to(res_dtype)


def _rms_prenorm_case(id, shape, dtype=f32, *, residual=True, fp32_residual=False):
    def make(device):
        r = Inputs(device)
        x = r.randn(*shape, dtype=dtype)
        return (x, r.randn(shape[-1], dtype=dtype), r.randn(*shape, dtype=dtype) if residual else None, 1e-5,
                fp32_residual)
    return _case(id, make, dtype)


def group_norm(x: Tensor, weight: Tensor, bias: Tensor, num_groups: int, eps: float = 1e-5,
               is_rms_norm: bool = False) -> Tensor:
    return fla_group_norm(x, weight, bias, eps=eps, is_rms_norm=is_rms_norm, num_groups=num_groups)


def group_norm_ref(x, weight, bias, num_groups, eps=1e-5, is_rms_norm=False):
    D = x.shape[-1]
    g = _ln(x.float().reshape(*x.shape[:-1], num_groups, D // num_groups), eps, is_rms_norm).reshape(x.shape)
    return _affine(g, weight, bias).to(x.dtype)


def _gn_case(id, shape, groups, dtype=f32, *, rms=False, layout=None):
    def make(device):
        r = Inputs(device)
        x = r.randn(*shape, dtype=dtype)
        D = shape[-1]
        return (layout(x) if layout else x, r.randn(D, dtype=dtype), r.randn(D, dtype=dtype), groups, 1e-5, rms)
    return _case(id, make, dtype)


# -- layer_norm_fwd: the plain forward wrapper (row kernel above D = 512) ----------------------------------------


def layer_norm_forward(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], eps: float = 1e-5,
                       is_rms_norm: bool = False, out_dtype: Optional[torch.dtype] = None) -> Tuple[Tensor, Tensor]:
    y, mean, rstd, residual_out = layer_norm_fwd(x, weight, bias, eps, out_dtype=out_dtype, is_rms_norm=is_rms_norm)
    return y, rstd


def layer_norm_forward_ref(x, weight, bias, eps=1e-5, is_rms_norm=False, out_dtype=None):
    xf = x.float()
    if not is_rms_norm:
        xf = xf - xf.mean(-1, keepdim=True)
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + eps)
    y = _affine(xf * rstd[:, None], weight, bias)
    return y.to(out_dtype or x.dtype), rstd


def _lnf_case(id, T, D, dtype=f32, *, rms=False, out_dtype=None, bias=True):
    def make(device):
        r = Inputs(device)
        return (r.randn(T, D, dtype=dtype), r.randn(D, dtype=dtype), r.randn(D, dtype=dtype) if bias else None,
                1e-5, rms, out_dtype)
    return _case(id, make, dtype)


# -- layer_norm_linear: LayerNormLinearFunction.apply (norm kernel, then F.linear) --------------------------------


def layer_norm_linear(x: Tensor, norm_weight: Tensor, norm_bias: Optional[Tensor], linear_weight: Tensor,
                      linear_bias: Optional[Tensor], eps: float = 1e-5, is_rms_norm: bool = False) -> Tensor:
    return fla_layer_norm_linear(x, norm_weight, norm_bias, linear_weight, linear_bias, eps=eps,
                                 is_rms_norm=is_rms_norm)


def layer_norm_linear_ref(x, norm_weight, norm_bias, linear_weight, linear_bias, eps=1e-5, is_rms_norm=False):
    y = _affine(_ln(x, eps, is_rms_norm), norm_weight, norm_bias).to(x.dtype).float()
    out = y @ linear_weight.float().t()
    if linear_bias is not None:
        out = out + linear_bias.float()
    return out.to(x.dtype)


def _lnl_case(id, dtype=f32, *, rms=False, bias=True):
    def make(device):
        r = Inputs(device)
        D, Dout = 32, 24
        return (r.randn(2, 5, D, dtype=dtype), r.randn(D, dtype=dtype), r.randn(D, dtype=dtype),
                r.randn(Dout, D, dtype=dtype, scale=0.2), r.randn(Dout, dtype=dtype) if bias else None, 1e-5, rms)
    return _case(id, make, dtype)


# -- fused_norm_gate: LayerNormGatedFunction.apply, layer_norm_gated_fwd -------------------------------------------


def _gate(y, g, activation):
    g = g.float()
    return y * (g * torch.sigmoid(g)) if activation in ("swish", "silu") else y * torch.sigmoid(g)


def layer_norm_gated(x: Tensor, g: Tensor, weight: Tensor, bias: Optional[Tensor], activation: str = "swish",
                     eps: float = 1e-6) -> Tensor:
    return fla_layer_norm_gated(x, g, weight, bias, activation=activation, eps=eps)


def layer_norm_gated_ref(x, g, weight, bias, activation="swish", eps=1e-6):
    return _gate(_affine(_ln(x, eps), weight, bias), g, activation).to(x.dtype)


def _lng_case(id, shape, dtype=f32, *, activation="swish", bias=True, layout=None):
    def make(device):
        r = Inputs(device)
        x, g = r.randn(*shape, dtype=dtype), r.randn(*shape, dtype=dtype)
        D = shape[-1]
        return (layout(x) if layout else x, g, r.randn(D, dtype=dtype), r.randn(D, dtype=dtype) if bias else None,
                activation, 1e-6)
    return _case(id, make, dtype)


def rms_norm_gated_prenorm(x: Tensor, g: Tensor, weight: Tensor, residual: Tensor, activation: str = "swish",
                           eps: float = 1e-6) -> Tuple[Tensor, Tensor]:
    y, residual_out = fla_rms_norm_gated(x, g, weight, None, activation=activation, residual=residual,
                                         prenorm=True, eps=eps)
    return y, residual_out


def rms_norm_gated_prenorm_ref(x, g, weight, residual, activation="swish", eps=1e-6):
    s = x.float() + residual.float()
    return _gate(_affine(_ln(s, eps, True), weight, None), g, activation).to(x.dtype), s.to(residual.dtype)


def _rmsg_case(id, shape, dtype=f32, *, activation="swish"):
    def make(device):
        r = Inputs(device)
        x, g, res = (r.randn(*shape, dtype=dtype) for _ in range(3))
        return (x, g, r.randn(shape[-1], dtype=dtype), res, activation, 1e-6)
    return _case(id, make, dtype)


def layer_norm_gated_forward(x: Tensor, g: Tensor, weight: Tensor, bias: Optional[Tensor], activation: str = "swish",
                             eps: float = 1e-5, is_rms_norm: bool = False) -> Tuple[Tensor, Tensor]:
    y, mean, rstd, residual_out = layer_norm_gated_fwd(x, g, weight, bias, activation=activation, eps=eps,
                                                       is_rms_norm=is_rms_norm)
    return y, rstd


def layer_norm_gated_forward_ref(x, g, weight, bias, activation="swish", eps=1e-5, is_rms_norm=False):
    xf = x.float()
    if not is_rms_norm:
        xf = xf - xf.mean(-1, keepdim=True)
    rstd = torch.rsqrt(xf.pow(2).mean(-1) + eps)
    return _gate(_affine(xf * rstd[:, None], weight, bias), g, activation).to(x.dtype), rstd


def _lngf_case(id, T, D, dtype=f32, *, activation="swish", rms=False):
    def make(device):
        r = Inputs(device)
        return (r.randn(T, D, dtype=dtype), r.randn(T, D, dtype=dtype), r.randn(D, dtype=dtype),
                r.randn(D, dtype=dtype), activation, 1e-5, rms)
    return _case(id, make, dtype)


# -- layernorm_gated: LayerNormFn.apply (group-wise norm, gate before or after) ---------------------------------


def layernorm_gated(x: Tensor, weight: Tensor, bias: Optional[Tensor], z: Optional[Tensor] = None,
                    eps: float = 1e-6, group_size: Optional[int] = None, norm_before_gate: bool = True) -> Tensor:
    return layernorm_fn(x, weight, bias, z=z, eps=eps, group_size=group_size, norm_before_gate=norm_before_gate)


def rmsnorm_gated(x: Tensor, weight: Tensor, bias: Optional[Tensor], z: Optional[Tensor] = None,
                  eps: float = 1e-6, group_size: Optional[int] = None, norm_before_gate: bool = True) -> Tensor:
    return rmsnorm_fn(x, weight, bias, z=z, eps=eps, group_size=group_size, norm_before_gate=norm_before_gate)


def _grouped_gated_ref(x, weight, bias, z, eps, group_size, norm_before_gate, rms):
    xf = x.float()
    if z is not None and not norm_before_gate:
        xf = xf * F.silu(z.float())
    D = x.shape[-1]
    G = group_size or D
    y = _ln(xf.reshape(*x.shape[:-1], D // G, G), eps, rms).reshape(x.shape)
    y = _affine(y, weight, bias)
    if z is not None and norm_before_gate:
        y = y * F.silu(z.float())
    return y.to(x.dtype)


def layernorm_gated_ref(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True):
    return _grouped_gated_ref(x, weight, bias, z, eps, group_size, norm_before_gate, False)


def rmsnorm_gated_ref(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True):
    return _grouped_gated_ref(x, weight, bias, z, eps, group_size, norm_before_gate, True)


def _lngrp_case(id, shape, dtype=f32, *, gate=True, group_size=None, before=True, bias=True, layout=None):
    def make(device):
        r = Inputs(device)
        x = r.randn(*shape, dtype=dtype)
        D = shape[-1]
        return (layout(x) if layout else x, r.randn(D, dtype=dtype), r.randn(D, dtype=dtype) if bias else None,
                r.randn(*shape, dtype=dtype) if gate else None, 1e-6, group_size, before)
    return _case(id, make, dtype)


# -- l2norm: L2NormFunction.apply, l2norm_fwd --------------------------------------------------------------------


def l2norm(x: Tensor, eps: float = 1e-6, output_dtype: Optional[torch.dtype] = None) -> Tensor:
    return fla_l2norm(x, eps=eps, output_dtype=output_dtype)


def l2norm_ref(x, eps=1e-6, output_dtype=None):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + eps)).to(output_dtype or x.dtype)


def l2norm_forward(x: Tensor, eps: float = 1e-6) -> Tuple[Tensor, Tensor]:
    y, rstd = l2norm_fwd(x, eps)
    return y, rstd


def l2norm_forward_ref(x, eps=1e-6):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).sum(-1) + eps)
    return (xf * rstd[..., None]).to(x.dtype), rstd


def _l2_case(id, shape, dtype=f32, *, out=None, layout=None, with_dtype=True):
    def make(device):
        x = Inputs(device).randn(*shape, dtype=dtype)
        x = layout(x) if layout else x
        return (x, 1e-6, out) if with_dtype else (x, 1e-6)
    return _case(id, make, dtype)


# ================================================================================================
# fla.modules.activations (Function.apply; fwdbwd is the plain wrapper the backward calls)
# ================================================================================================


def _act_case(id, shape, dtype=f32, *, n=1, extra=(), layout=None):
    def make(device):
        r = Inputs(device)
        xs = [r.randn(*shape, dtype=dtype) for _ in range(n)]
        if layout:
            xs[0] = layout(xs[0])
        return (*xs, *extra)
    return _case(id, make, dtype)


def swiglu(x: Tensor, y: Tensor) -> Tensor:
    return fla_swiglu(x, y)


def swiglu_ref(x, y):
    return (F.silu(x.float()) * y.float()).to(x.dtype)


def swiglu_forward_backward(x: Tensor, y: Tensor, g: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    dx, dy, z = swiglu_fwdbwd(x, y, g, use_weight=True)
    return dx, dy, z


def swiglu_forward_backward_ref(x, y, g):
    xf, yf, gf = x.float(), y.float(), g.float()
    s = torch.sigmoid(xf)
    dx = gf * yf * s * (1 + xf * (1 - s))
    dy = gf * xf * s
    return dx.to(x.dtype), dy.to(y.dtype), (xf * s * yf).to(x.dtype)


def sigmoid(x: Tensor) -> Tensor:
    return fla_sigmoid(x)


def logsigmoid(x: Tensor, temperature: float = 1.0) -> Tensor:
    return fla_logsigmoid(x, temperature)


def logsigmoid_ref(x, temperature=1.0):
    return (F.logsigmoid(x.float()) / temperature).to(x.dtype)


def swish(x: Tensor) -> Tensor:
    return fla_swish(x)


def elu_p1(x: Tensor) -> Tensor:
    # the plain forward wrapper: the public fla elu_p1 computes in torch (no kernel) for CPU tensors
    return elu_p1_fwd(x)


def sigmoidglu(x: Tensor, y: Tensor) -> Tensor:
    return fla_sigmoidglu(x, y)


def powglu(x: Tensor, y: Tensor, power: float = 3.0) -> Tensor:
    return fla_powglu(x, y, power)


def powglu_ref(x, y, power=3.0):
    xf = x.float()
    pos = xf > 0
    xp = torch.where(pos, xf, torch.ones_like(xf))
    gate = torch.where(pos, xp.pow(power / (xp.sqrt() + 1)), xf) * torch.sigmoid(xf)
    return (gate * y.float()).to(x.dtype)


def swiglu_linear(x: Tensor, y: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    return fla_swiglu_linear(x, y, weight, bias)


def swiglu_linear_ref(x, y, weight, bias):
    z = swiglu_ref(x, y).float()
    out = z @ weight.float().t()
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype)


def _swiglu_linear_case(id, dtype=f32, *, bias=True):
    def make(device):
        r = Inputs(device)
        return (r.randn(2, 5, 32, dtype=dtype), r.randn(2, 5, 32, dtype=dtype), r.randn(16, 32, dtype=dtype, scale=0.2),
                r.randn(16, dtype=dtype) if bias else None)
    return _case(id, make, dtype)


# ================================================================================================
# fla.modules losses: fused cross entropy, fused KL divergence, fused linear cross entropy
# ================================================================================================


def _ce_rows(logits, target, label_smoothing=0.0, logit_scale=1.0, lse_square_scale=0.0, logit_softcapping=None,
             ignore_index=-100):
    x = logits.float() * logit_scale
    if logit_softcapping is not None:
        x = logit_softcapping * torch.tanh(x / logit_softcapping)
    lse = torch.logsumexp(x, -1)
    ignored = target == ignore_index
    picked = x.gather(1, target.clamp(min=0)[:, None])[:, 0]
    loss = -picked
    if label_smoothing > 0:
        loss = (1 - label_smoothing) * loss - label_smoothing * x.sum(-1) / x.shape[-1]
    z = lse_square_scale * lse * lse
    loss = loss + lse + z
    return loss.masked_fill(ignored, 0.0), z.masked_fill(ignored, 0.0), lse


def cross_entropy(logits: Tensor, target: Tensor, label_smoothing: float = 0.0, logit_scale: float = 1.0,
                  lse_square_scale: float = 0.0, logit_softcapping: Optional[float] = None,
                  ignore_index: int = -100) -> Tuple[Tensor, Tensor]:
    loss, z_loss = cross_entropy_loss(logits, target, label_smoothing=label_smoothing, logit_scale=logit_scale,
                                      lse_square_scale=lse_square_scale, logit_softcapping=logit_softcapping,
                                      ignore_index=ignore_index)
    return loss, z_loss


def cross_entropy_ref(logits, target, label_smoothing=0.0, logit_scale=1.0, lse_square_scale=0.0,
                      logit_softcapping=None, ignore_index=-100):
    loss, z, lse = _ce_rows(logits, target, label_smoothing, logit_scale, lse_square_scale, logit_softcapping,
                            ignore_index)
    return loss, z


def cross_entropy_forward(logits: Tensor, target: Tensor, label_smoothing: float = 0.0, logit_scale: float = 1.0,
                          lse_square_scale: float = 0.0, logit_softcapping: Optional[float] = None,
                          ignore_index: int = -100) -> Tuple[Tensor, Tensor, Tensor]:
    loss, z_loss, lse, total_classes, class_start_idx = cross_entropy_fwd(
        logits, target, label_smoothing, logit_scale, lse_square_scale, logit_softcapping, ignore_index)
    return loss, z_loss, lse


def cross_entropy_forward_ref(logits, target, label_smoothing=0.0, logit_scale=1.0, lse_square_scale=0.0,
                              logit_softcapping=None, ignore_index=-100):
    return _ce_rows(logits, target, label_smoothing, logit_scale, lse_square_scale, logit_softcapping, ignore_index)


def _ce_case(id, dtype=f32, *, N=8, V=100, smoothing=0.0, scale=1.0, z=0.0, softcap=None, layout=None,
             gpu_only=""):
    def make(device):
        r = Inputs(device)
        logits = r.randn(N, V, dtype=dtype)
        target = r.randint(V, N)
        target[::3] = -100
        return (layout(logits) if layout else logits, target, smoothing, scale, z, softcap, -100)
    return _case(id, make, dtype, gpu_only)


def kl_div(x: Tensor, target_x: Tensor, weight: Tensor, target_weight: Tensor, reduction: str = "batchmean",
           accumulate_grad_in_fp32: bool = True) -> Tensor:
    return fused_kl_div_loss(x, target_x, weight, target_weight, reduction=reduction,
                             accumulate_grad_in_fp32=accumulate_grad_in_fp32)


def kl_div_ref(x, target_x, weight, target_weight, reduction="batchmean", accumulate_grad_in_fp32=True):
    s = F.linear(x, weight).float()  # the logits, in the input dtype as the wrapper makes them
    t = F.linear(target_x, target_weight).float()
    ls, lt = torch.log_softmax(s, -1), torch.log_softmax(t, -1)
    loss = (lt.exp() * (lt - ls)).sum()
    return loss / x.shape[0] if reduction == "batchmean" else loss


def _kl_case(id, dtype=f32, *, N=12, H=16, V=40, reduction="batchmean"):
    def make(device):
        r = Inputs(device)
        return (r.randn(N, H, dtype=dtype), r.randn(N, H, dtype=dtype), r.randn(V, H, dtype=dtype, scale=0.3),
                r.randn(V, H, dtype=dtype, scale=0.3), reduction)
    return _case(id, make, dtype)


def _flce_loss_ref(x, target, weight, bias, ignore_index, label_smoothing, logit_scale, reduction):
    logits = F.linear(x, weight, bias).float() * logit_scale
    loss = F.cross_entropy(logits, target, ignore_index=ignore_index, reduction="sum", label_smoothing=label_smoothing)
    return loss / (target != ignore_index).sum().clamp(min=1) if reduction == "mean" else loss


def fused_linear_cross_entropy(x: Tensor, target: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                               ignore_index: int = -100, label_smoothing: float = 0.0, logit_scale: float = 1.0,
                               num_chunks: int = 8, reduction: str = "mean") -> Tensor:
    return fused_linear_cross_entropy_loss(x, target, weight, bias, ignore_index=ignore_index,
                                           label_smoothing=label_smoothing, logit_scale=logit_scale,
                                           num_chunks=num_chunks, reduction=reduction)


def fused_linear_cross_entropy_ref(x, target, weight, bias=None, ignore_index=-100, label_smoothing=0.0,
                                   logit_scale=1.0, num_chunks=8, reduction="mean"):
    return _flce_loss_ref(x, target, weight, bias, ignore_index, label_smoothing, logit_scale, reduction)


def fused_linear_cross_entropy_forward(x: Tensor, target: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                                       ignore_index: int = -100, label_smoothing: float = 0.0,
                                       num_chunks: int = 8, reduction: str = "mean") -> Tuple[Tensor, Tensor, Tensor]:
    loss, dx, dw, db = fused_linear_cross_entropy_fwd(x, target, weight, bias, ignore_index=ignore_index,
                                                      label_smoothing=label_smoothing, num_chunks=num_chunks,
                                                      reduction=reduction)
    return loss, dx, dw


def fused_linear_cross_entropy_forward_ref(x, target, weight, bias=None, ignore_index=-100, label_smoothing=0.0,
                                           num_chunks=8, reduction="mean"):
    xf = x.float().requires_grad_()
    wf = weight.float().requires_grad_()
    with torch.enable_grad():
        logits = xf @ wf.t() + (0 if bias is None else bias.float())
        loss = F.cross_entropy(logits, target, ignore_index=ignore_index, reduction="sum",
                               label_smoothing=label_smoothing)
        if reduction == "mean":
            loss = loss / (target != ignore_index).sum().clamp(min=1)
        dx, dw = torch.autograd.grad(loss, (xf, wf))
    return loss.detach(), dx.to(x.dtype), dw.to(weight.dtype)


def _flce_case(id, dtype=f32, *, N=16, H=16, V=40, bias=True, smoothing=0.0, reduction="mean", chunks=8,
               with_scale=True):
    def make(device):
        r = Inputs(device)
        target = r.randint(V, N)
        target[1::5] = -100
        args = (r.randn(N, H, dtype=dtype), target, r.randn(V, H, dtype=dtype, scale=0.3),
                r.randn(V, dtype=dtype) if bias else None, -100, smoothing)
        return (*args, 1.0, chunks, reduction) if with_scale else (*args, chunks, reduction)
    return _case(id, make, dtype)


# ================================================================================================
# fla.modules: rotary, token shift, causal conv1d, BitLinear
# ================================================================================================


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False, seqlen_offsets: int = 0,
                     cu_seqlens: Optional[Tensor] = None) -> Tensor:
    return fla_rotary_embedding(x, cos, sin, interleaved=interleaved, seqlen_offsets=seqlen_offsets,
                                cu_seqlens=cu_seqlens)


def _rotate(x, cos, sin, interleaved, conjugate=False):
    """x: [..., D]; cos/sin: [..., R/2] broadcast over heads; rotates the first R features."""
    R = cos.shape[-1] * 2
    xf = x.float()
    rot, keep = xf[..., :R], xf[..., R:]
    c, s = cos.float(), sin.float()
    if conjugate:
        s = -s
    if not interleaved:
        x0, x1 = rot[..., : R // 2], rot[..., R // 2:]
        out = torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)
    else:
        x0, x1 = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)
    return torch.cat([out, keep], -1).to(x.dtype)


def _positions(B, T, offsets, cu_seqlens, device):
    if cu_seqlens is not None:
        pos = torch.cat([torch.arange(int(e - s), device=device) for s, e in zip(cu_seqlens[:-1], cu_seqlens[1:])])
        return pos[None]
    offsets = offsets if isinstance(offsets, torch.Tensor) else torch.full((B,), offsets, device=device)
    return torch.arange(T, device=device)[None] + offsets[:, None].to(device)


def rotary_embedding_ref(x, cos, sin, interleaved=False, seqlen_offsets=0, cu_seqlens=None):
    pos = _positions(x.shape[0], x.shape[1], seqlen_offsets, cu_seqlens, x.device)  # [B, T]
    return _rotate(x, cos[pos][:, :, None], sin[pos][:, :, None], interleaved)


def rotary_embedding_forward(x: Tensor, cos: Tensor, sin: Tensor, seqlen_offsets: Tensor, interleaved: bool = False,
                             conjugate: bool = False) -> Tensor:
    return rotary_embedding_fwdbwd(x, cos, sin, seqlen_offsets=seqlen_offsets, interleaved=interleaved,
                                   conjugate=conjugate)


def rotary_embedding_forward_ref(x, cos, sin, seqlen_offsets, interleaved=False, conjugate=False):
    pos = _positions(x.shape[0], x.shape[1], seqlen_offsets, None, x.device)
    return _rotate(x, cos[pos][:, :, None], sin[pos][:, :, None], interleaved, conjugate)


def _cos_sin(TR, R, dtype, device):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, R, 2, dtype=torch.float32) / R))
    ang = torch.arange(TR, dtype=torch.float32)[:, None] * inv_freq
    return ang.cos().to(dtype=dtype, device=device), ang.sin().to(dtype=dtype, device=device)


def _rotary_case(id, dtype=f32, *, B=2, T=10, H=2, D=16, R=16, TR=16, interleaved=False, offset=0, varlen=False):
    def make(device):
        r = Inputs(device)
        x = r.randn(1 if varlen else B, T, H, D, dtype=dtype)
        cos, sin = _cos_sin(TR, R, dtype, device)
        cu = torch.tensor([0, 3, T], device=device) if varlen else None
        return (x, cos, sin, interleaved, offset, cu)
    return _case(id, make, dtype)


def _rotary_fwd_case(id, dtype=f32, *, interleaved=False, conjugate=False, R=16):
    def make(device):
        r = Inputs(device)
        x = r.randn(2, 8, 2, 16, dtype=dtype)
        cos, sin = _cos_sin(16, R, dtype, device)
        return (x, cos, sin, torch.tensor([0, 5], device=device), interleaved, conjugate)
    return _case(id, make, dtype)


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
        x = r.randn(*shape, dtype=dtype)
        return (x, r.randn(shape[0], shape[2], dtype=dtype) if cache else None)
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
    final = xx[:, -W:].transpose(1, 2)
    return y.to(x.dtype), final.to(x.dtype)


def _conv_case(id, dtype=f32, *, B=2, T=12, D=16, W=4, bias=True, residual=False, state=False, act="swish",
               layout=None):
    def make(device):
        r = Inputs(device)
        x = r.randn(B, T, D, dtype=dtype)
        return (layout(x) if layout else x, r.randn(D, W, dtype=dtype, scale=0.5),
                r.randn(D, dtype=dtype) if bias else None, r.randn(B, T, D, dtype=dtype) if residual else None,
                r.randn(B, D, W, dtype=dtype) if state else None, act)
    return _case(id, make, dtype)


def causal_conv1d_update(x: Tensor, cache: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                         activation: Optional[str] = None) -> Tensor:
    y, cache = fla_causal_conv1d_update(x, cache, weight=weight, bias=bias, activation=activation)
    return y  # the wrapper also returns `cache`, which it updates in place


def causal_conv1d_update_ref(x, cache, weight, bias=None, activation=None):
    window = torch.cat([cache.float()[..., 1:], x.float()[..., None]], -1)  # [N, D, W]
    y = (window * weight.float()).sum(-1)
    if bias is not None:
        y = y + bias.float()
    if activation in ("swish", "silu"):
        y = F.silu(y)
    return y.to(x.dtype)


def _conv_update_case(id, dtype=f32, *, N=3, D=32, W=4, bias=True, act=None):
    def make(device):
        r = Inputs(device)
        return (r.randn(N, D, dtype=dtype), r.randn(N, D, W, dtype=dtype), r.randn(D, W, dtype=dtype, scale=0.5),
                r.randn(D, dtype=dtype) if bias else None, act)
    return _case(id, make, dtype)


def bit_linear(x: Tensor, weight: Tensor, bias: Optional[Tensor], norm_weight: Optional[Tensor],
               eps: float = 1e-8) -> Tensor:
    return fla_bit_linear(x, weight, bias, norm_weight=norm_weight, eps=eps)


def bit_linear_ref(x, weight, bias, norm_weight, eps=1e-8):
    y = _affine(_ln(x, eps, rms=True), norm_weight, None)
    scale = 127.0 / y.abs().amax(-1, keepdim=True).clamp(min=1e-5)
    ys = y * scale
    q = torch.where(ys >= 0, torch.floor(ys + 0.5), torch.ceil(ys - 0.5)).clamp(-128, 127) / scale  # half away
    q = q.to(x.dtype).float()
    wf = weight.float()
    ws = 1.0 / wf.abs().mean().clamp(min=1e-5)
    wq = ((wf * ws).round().clamp(-1, 1) / ws).to(x.dtype).float()
    out = q @ wq.t()
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype)


def _bitlinear_case(id, dtype=f32, *, bias=True, norm=True):
    def make(device):
        r = Inputs(device)
        D, Dout = 32, 16
        return (r.randn(2, 5, D, dtype=dtype), r.randn(Dout, D, dtype=dtype),
                r.randn(Dout, dtype=dtype) if bias else None, r.rand(D, dtype=dtype) + 0.5 if norm else None, 1e-8)
    return _case(id, make, dtype)


# ================================================================================================
# fla.ops.utils: cumsum, softmax, logsumexp, solve_tril, pooling, matmul, pack/unpack
# ================================================================================================


def local_cumsum(g: Tensor, chunk_size: int, reverse: bool = False, scale: Optional[float] = None,
                 output_dtype: Optional[torch.dtype] = torch.float) -> Tensor:
    return chunk_local_cumsum(g, chunk_size, reverse=reverse, scale=scale, output_dtype=output_dtype)


def local_cumsum_ref(g, chunk_size, reverse=False, scale=None, output_dtype=torch.float):
    B, T = g.shape[:2]
    out = torch.empty_like(g, dtype=torch.float32)
    for s in range(0, T, chunk_size):
        c = g[:, s:s + chunk_size].float()
        out[:, s:s + chunk_size] = c.flip(1).cumsum(1).flip(1) if reverse else c.cumsum(1)
    if scale is not None:
        out = out * scale
    return out.to(output_dtype or g.dtype)


def _cumsum_case(id, shape, dtype=f32, *, chunk=16, reverse=False, scale=None, out=torch.float):
    def make(device):
        g = F.logsigmoid(Inputs(device).randn(*shape)).to(dtype)
        return (g, chunk, reverse, scale, out)
    return _case(id, make, dtype)


def global_cumsum(s: Tensor, reverse: bool = False, scale: Optional[float] = None,
                  output_dtype: Optional[torch.dtype] = torch.float, cu_seqlens: Optional[Tensor] = None) -> Tensor:
    return chunk_global_cumsum(s, reverse=reverse, cu_seqlens=cu_seqlens, scale=scale, output_dtype=output_dtype)


def global_cumsum_ref(s, reverse=False, scale=None, output_dtype=torch.float, cu_seqlens=None):
    out = torch.empty_like(s, dtype=torch.float32)
    bounds = [(0, s.shape[1])] if cu_seqlens is None else list(zip(cu_seqlens[:-1].tolist(), cu_seqlens[1:].tolist()))
    for a, b in bounds:
        c = s[:, a:b].float()
        out[:, a:b] = c.flip(1).cumsum(1).flip(1) if reverse else c.cumsum(1)
    if scale is not None:
        out = out * scale
    return out.to(output_dtype or s.dtype)


def _global_cumsum_case(id, shape, dtype=f32, *, reverse=False, scale=None, out=torch.float, varlen=False):
    def make(device):
        s = F.logsigmoid(Inputs(device).randn(*shape)).to(dtype)
        cu = torch.tensor([0, 7, shape[1]], device=device) if varlen else None
        return (s, reverse, scale, out, cu)
    return _case(id, make, dtype)


def softmax(x: Tensor, dtype: Optional[torch.dtype] = torch.float) -> Tensor:
    return softmax_fwd(x, dtype=dtype)


def softmax_ref(x, dtype=torch.float):
    return torch.softmax(x.float(), -1).to(dtype or x.dtype)


def logsumexp(x: Tensor, scale: Optional[float] = None, dtype: Optional[torch.dtype] = None) -> Tensor:
    return logsumexp_fwd(x, scale=scale, dtype=dtype)


def logsumexp_ref(x, scale=None, dtype=None):
    xf = x.float() * (1.0 if scale is None else scale)
    return torch.logsumexp(xf, -1).to(dtype or torch.float)


def solve_tril(A: Tensor, output_dtype: Optional[torch.dtype] = torch.float) -> Tensor:
    return fla_solve_tril(A, output_dtype=output_dtype)


def solve_tril_ref(A, output_dtype=torch.float):
    B, T, H, BT = A.shape
    out = torch.zeros(B, T, H, BT, dtype=torch.float32, device=A.device)
    eye = torch.eye(BT, device=A.device)
    for s in range(0, T, BT):
        blk = A[:, s:s + BT].float().transpose(1, 2)  # [B, H, n, BT]
        n = blk.shape[2]
        m = eye[:n, :n] + blk[..., :n]
        out[:, s:s + BT, :, :n] = torch.linalg.inv(m).transpose(1, 2)
    return out.to(output_dtype or A.dtype)


def _solve_tril_case(id, T, BT, dtype=f32, *, out=torch.float):
    def make(device):
        A = Inputs(device).randn(1, T, 2, BT, scale=0.1)
        rows = torch.arange(T, device=device)[:, None] % BT
        A = A * (torch.arange(BT, device=device)[None, :] < rows)[None, :, None, :]  # strictly lower, per chunk
        return (A.to(dtype), out)
    return _case(id, make, dtype)


def mean_pooling(x: Tensor, chunk_size: int, cu_seqlens: Optional[Tensor] = None) -> Tensor:
    return fla_mean_pooling(x, chunk_size, cu_seqlens=cu_seqlens)


def mean_pooling_ref(x, chunk_size, cu_seqlens=None):
    bounds = [(0, x.shape[1])] if cu_seqlens is None else list(zip(cu_seqlens[:-1].tolist(), cu_seqlens[1:].tolist()))
    chunks = [x[:, s:min(s + chunk_size, b)].float().mean(1) for a, b in bounds for s in range(a, b, chunk_size)]
    return torch.stack(chunks, 1).to(x.dtype)


def _pool_case(id, dtype=f32, *, B=2, T=20, chunk=8, varlen=False):
    def make(device):
        x = Inputs(device).randn(1 if varlen else B, T, 2, 24, dtype=dtype)
        return (x, chunk, torch.tensor([0, 5, T], device=device) if varlen else None)
    return _case(id, make, dtype)


def matmul(a: Tensor, b: Tensor, activation: str = "") -> Tensor:
    return fla_matmul(a, b, activation=activation)


def matmul_ref(a, b, activation=""):
    c = a.float() @ b.float()
    c = {"": c, "relu": F.relu(c), "leaky_relu": F.leaky_relu(c, 0.01), "sigmoid": torch.sigmoid(c),
         "tanh": torch.tanh(c)}[activation]
    return c.to(a.dtype)


def _matmul_case(id, a_shape, K, N, dtype=f32, *, activation="", layout=None):
    def make(device):
        r = Inputs(device)
        a = r.randn(*a_shape, K, dtype=dtype, scale=0.3)
        return (layout(a) if layout else a, r.randn(K, N, dtype=dtype, scale=0.3), activation)
    return _case(id, make, dtype)


def addmm(x: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return fla_addmm(x, a, b)


def addmm_ref(x, a, b):
    return (a.float() @ b.float() + x.float()).to(a.dtype)


def _addmm_case(id, M, K, N, dtype=f32, *, bias_only=False):
    def make(device):
        r = Inputs(device)
        x = r.randn(N, dtype=dtype) if bias_only else r.randn(M, N, dtype=dtype)
        return (x, r.randn(M, K, dtype=dtype, scale=0.3), r.randn(K, N, dtype=dtype, scale=0.3))
    return _case(id, make, dtype)


def _padded_rows(lens, S, padding_side):
    return [(S - n if padding_side == "left" else 0, n) for n in lens]


def pack_sequence(x: Tensor, cu_seqlens: Tensor, padding_side: str = "left") -> Tensor:
    return fla_pack_sequence(x, cu_seqlens, padding_side)


def pack_sequence_ref(x, cu_seqlens, padding_side="left"):
    lens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    return torch.cat([x[b, s:s + n] for b, (s, n) in enumerate(_padded_rows(lens, x.shape[1], padding_side))])


def unpack_sequence(x: Tensor, cu_seqlens: Tensor, padding_side: str, desired_shape: List[int]) -> Tensor:
    return fla_unpack_sequence(x, cu_seqlens, padding_side, torch.Size(desired_shape))  # asserts on Size slices


def unpack_sequence_ref(x, cu_seqlens, padding_side, desired_shape):
    y = x.new_zeros(desired_shape)
    lens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    for b, (s, n) in enumerate(_padded_rows(lens, desired_shape[1], padding_side)):
        a = int(cu_seqlens[b])
        y[b, s:s + n] = x[a:a + n]
    return y


def _pack_case(id, dtype=f32, *, side="left"):
    def make(device):
        x = Inputs(device).randn(3, 6, 2, 8, dtype=dtype)
        return (x, torch.tensor([0, 4, 10, 12], device=device), side)
    return _case(id, make, dtype)


def _unpack_case(id, dtype=f32, *, side="left"):
    def make(device):
        x = Inputs(device).randn(12, 2, 8, dtype=dtype)
        return (x, torch.tensor([0, 4, 10, 12], device=device), side, [3, 6, 2, 8])
    return _case(id, make, dtype)


# ================================================================================================
# fla.ops: linear-attention recurrences (fused_recurrent_*, parallel_*, chunk_*)
# ================================================================================================


def _sequences(B, T, cu_seqlens):
    """(batch row, start, end) of each sequence: B equal-length rows, or cu_seqlens' segments of row 0."""
    if cu_seqlens is None:
        return [(b, 0, T) for b in range(B)]
    return [(0, int(s), int(e)) for s, e in zip(cu_seqlens[:-1].tolist(), cu_seqlens[1:].tolist())]


def _gated_recurrence(q, k, v, scale, gk=None, gv=None, h0=None, reverse=False, cu_seqlens=None, u=None):
    """S_t = diag(exp(gk_t)) S_{t-1} diag(exp(gv_t)) + k_t v_t^T, o_t = scale q_t^T S_t, per head ([K, V] states);
    with a bonus u (RWKV-6): o_t = scale q_t^T (S_{t-1} + (u * k_t) v_t^T)."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    qf, kf, vf = q.float() * scale, k.float(), v.float()
    o = torch.zeros(B, T, H, V, device=q.device)
    states = []
    for n, (b, s, e) in enumerate(_sequences(B, T, cu_seqlens)):
        S = h0[n].float().clone() if h0 is not None else torch.zeros(H, K, V, device=q.device)
        for t in (range(e - 1, s - 1, -1) if reverse else range(s, e)):
            kv = kf[b, t, :, :, None] * vf[b, t, :, None, :]
            if u is not None:
                o[b, t] = (qf[b, t, :, :, None] * (S + u.float()[:, :, None] * kv)).sum(-2)
            if gk is not None:
                S = S * gk[b, t].float().exp()[:, :, None]
            if gv is not None:
                S = S * gv[b, t].float().exp()[:, None, :]
            S = S + kv
            if u is None:
                o[b, t] = (qf[b, t, :, :, None] * S).sum(-2)
        states.append(S)
    return o, torch.stack(states)


def _expand_heads(x, heads):
    return x.repeat_interleave(heads // x.shape[2], dim=2) if x.shape[2] != heads else x


def _delta_recurrence(q, k, v, beta, scale, g=None, gk=None, h0=None, l2norm_qk=False, cu_seqlens=None):
    """Gated delta rule: S <- exp(g_t) S; S <- S + k_t (beta_t (v_t - S^T k_t))^T; o_t = scale S^T q_t (v may have
    more heads than q/k: each group of value heads shares one q/k head)."""
    B, T, HV, V = v.shape
    q, k = _expand_heads(q, HV).float(), _expand_heads(k, HV).float()
    if l2norm_qk:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    q = q * scale
    K = q.shape[-1]
    vf, bf = v.float(), beta.float()
    o = torch.zeros(B, T, HV, V, device=v.device)
    states = []
    for n, (b, s, e) in enumerate(_sequences(B, T, cu_seqlens)):
        S = h0[n].float().clone() if h0 is not None else torch.zeros(HV, K, V, device=v.device)
        for t in range(s, e):
            if g is not None:
                S = S * g[b, t].float().exp()[:, None, None]
            if gk is not None:
                S = S * gk[b, t].float().exp()[:, :, None]
            bt = bf[b, t][:, None] if bf.dim() == 3 else bf[b, t]
            upd = bt * (vf[b, t] - (S * k[b, t, :, :, None]).sum(-2))
            S = S + k[b, t, :, :, None] * upd[:, None, :]
            o[b, t] = (S * q[b, t, :, :, None]).sum(-2)
        states.append(S)
    return o, torch.stack(states)


def _att_inputs(r, dtype, B, T, H, K, V, HV=None):
    return (r.randn(B, T, H, K, dtype=dtype), r.randn(B, T, H, K, dtype=dtype), r.randn(B, T, HV or H, V, dtype=dtype))


def _decay(r, *shape, dtype=f32):
    """Log decays in (-inf, 0): logsigmoid of a shifted normal (mostly close to 0, as trained gates are)."""
    return F.logsigmoid(r.randn(*shape) + 2.0).to(dtype=dtype)


# -- simple_gla (head-wise scalar gates) ---------------------------------------------------------------------------


def fused_recurrent_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Optional[Tensor] = None,
                               scale: Optional[float] = None, reverse: bool = False,
                               cu_seqlens: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_simple_gla(q, k, v, g, scale=scale, initial_state=initial_state,
                                               output_final_state=True, reverse=reverse, cu_seqlens=cu_seqlens)
    return o, ht


def _simple_gla_ref(q, k, v, g, initial_state=None, scale=None, reverse=False, cu_seqlens=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    gk = g[..., None].expand(q.shape)
    o, ht = _gated_recurrence(q, k, v, scale, gk=gk, h0=initial_state, reverse=reverse, cu_seqlens=cu_seqlens)
    return o.to(v.dtype), ht


def _simple_gla_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16, h0=True, scale=None, reverse=False,
                     varlen=False):
    def make(device):
        r = Inputs(device)
        bsz = 1 if varlen else B
        q, k, v = _att_inputs(r, dtype, bsz, T, H, K, V)
        g = _decay(r, bsz, T, H).to(device)
        N = 2 if varlen else B
        cu = torch.tensor([0, 5, T], device=device) if varlen else None
        return (q, k, v, g, r.randn(N, H, K, V) if h0 else None, scale, reverse, cu)
    return _case(id, make, dtype)


def chunk_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Optional[Tensor] = None,
                     scale: Optional[float] = None, reverse: bool = False,
                     cu_seqlens: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    assert not reverse  # the chunked kernel has no reverse mode: same arguments as the recurrent entry
    o, ht = fla_ops.chunk_simple_gla(q, k, v, g, scale=scale, initial_state=initial_state, output_final_state=True,
                                     cu_seqlens=cu_seqlens)
    return o, ht


def parallel_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Optional[Tensor], scale: Optional[float] = None) -> Tensor:
    o, attn = fla_ops.parallel_simple_gla(q, k, v, g, scale=scale)
    return o


def parallel_simple_gla_ref(q, k, v, g, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    gk = g[..., None].expand(q.shape) if g is not None else None
    return _gated_recurrence(q, k, v, scale, gk=gk)[0].to(v.dtype)


def _parallel_case(id, dtype=f32, *, B=2, T=24, H=2, K=16, V=16, gate=True, scale=None):
    def make(device):
        r = Inputs(device)
        q, k, v = _att_inputs(r, dtype, B, T, H, K, V)
        return (q, k, v, _decay(r, B, T, H, dtype=torch.float).to(device) if gate else None, scale)
    return _case(id, make, dtype)


# -- gla (key-wise gates) -------------------------------------------------------------------------------------------


def fused_recurrent_gla(q: Tensor, k: Tensor, v: Tensor, gk: Optional[Tensor], gv: Optional[Tensor] = None,
                        initial_state: Optional[Tensor] = None, reverse: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_gla(q, k, v, gk, gv, initial_state=initial_state, output_final_state=True,
                                        reverse=reverse)
    return o, ht


def fused_recurrent_gla_ref(q, k, v, gk, gv=None, initial_state=None, reverse=False):
    o, ht = _gated_recurrence(q, k, v, q.shape[-1] ** -0.5, gk=gk, gv=gv, h0=initial_state, reverse=reverse)
    return o.to(v.dtype), ht


def _gla_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16, gv=False, h0=True, reverse=False, with_gv=True):
    def make(device):
        r = Inputs(device)
        q, k, v = _att_inputs(r, dtype, B, T, H, K, V)
        gk = _decay(r, B, T, H, K, dtype=dtype).to(device)
        gvt = _decay(r, B, T, H, V, dtype=dtype).to(device) if gv else None
        h = r.randn(B, H, K, V) if h0 else None
        return (q, k, v, gk, gvt, h, reverse) if with_gv else (q, k, v, gk, h)
    return _case(id, make, dtype)


def chunk_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Optional[Tensor] = None) -> Tuple[Tensor,
                                                                                                           Tensor]:
    o, ht = fla_ops.chunk_gla(q, k, v, g, initial_state=initial_state, output_final_state=True)
    return o, ht


def chunk_gla_ref(q, k, v, g, initial_state=None):
    return fused_recurrent_gla_ref(q, k, v, g, None, initial_state)


# -- retention (fixed head-wise decays) -----------------------------------------------------------------------------


def _retention_gk(q):
    H = q.shape[2]
    g = (1 - 2.0 ** (-5.0 - torch.arange(H, dtype=torch.float, device=q.device))).log()
    return g[None, None, :, None].expand(q.shape)


def fused_recurrent_retention(q: Tensor, k: Tensor, v: Tensor, initial_state: Optional[Tensor] = None,
                              scale: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_retention(q, k, v, scale=scale, initial_state=initial_state,
                                              output_final_state=True)
    return o, ht


def retention_ref(q, k, v, initial_state=None, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, ht = _gated_recurrence(q, k, v, scale, gk=_retention_gk(q), h0=initial_state)
    return o.to(v.dtype), ht


def _retention_case(id, dtype=f32, *, B=2, T=12, H=3, K=16, V=16, h0=True, scale=None):
    def make(device):
        r = Inputs(device)
        q, k, v = _att_inputs(r, dtype, B, T, H, K, V)
        return (q, k, v, r.randn(B, H, K, V) if h0 else None, scale)
    return _case(id, make, dtype)


def chunk_retention(q: Tensor, k: Tensor, v: Tensor, initial_state: Optional[Tensor] = None,
                    scale: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.chunk_retention(q, k, v, scale=scale, initial_state=initial_state, output_final_state=True)
    return o, ht


def parallel_retention(q: Tensor, k: Tensor, v: Tensor, scale: Optional[float] = None) -> Tensor:
    o, attn = fla_ops.parallel_retention(q, k, v, scale=scale)
    return o


def parallel_retention_ref(q, k, v, scale=None):
    return retention_ref(q, k, v, None, scale)[0]


# -- linear attention ---------------------------------------------------------------------------------------------


def fused_recurrent_linear_attn(q: Tensor, k: Tensor, v: Tensor, initial_state: Optional[Tensor] = None,
                                scale: Optional[float] = None, reverse: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_linear_attn(q, k, v, scale=scale, initial_state=initial_state,
                                                output_final_state=True, reverse=reverse)
    return o, ht


def linear_attn_ref(q, k, v, initial_state=None, scale=None, reverse=False):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, ht = _gated_recurrence(q, k, v, scale, h0=initial_state, reverse=reverse)
    return o.to(v.dtype), ht


def _linear_attn_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16, h0=True, scale=None, reverse=False,
                      with_reverse=True):
    def make(device):
        r = Inputs(device)
        q, k, v = _att_inputs(r, dtype, B, T, H, K, V)
        h = r.randn(B, H, K, V) if h0 else None
        return (q, k, v, h, scale, reverse) if with_reverse else (q, k, v, h, scale)
    return _case(id, make, dtype)


def fused_recurrent_linear_attn_normalized(q: Tensor, k: Tensor, v: Tensor, scale: Optional[float] = None) -> Tensor:
    o, (kv_state, z_state) = fla_ops.fused_recurrent_linear_attn(q, k, v, scale=scale, normalize=True)
    return o


def linear_attn_normalized_ref(q, k, v, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, _ = _gated_recurrence(q, k, v, scale)
    denom = (q.float() * scale * k.float().cumsum(1)).sum(-1, keepdim=True) + 1e-10
    return (o.to(v.dtype).float() / denom).to(v.dtype)


def _positive_qk_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16):
    def make(device):
        r = Inputs(device)
        q, k, v = _att_inputs(r, dtype, B, T, H, K, V)
        return (F.elu(q.float()).add(1).to(dtype), F.elu(k.float()).add(1).to(dtype), v, None)
    return _case(id, make, dtype)


def chunk_linear_attn(q: Tensor, k: Tensor, v: Tensor, initial_state: Optional[Tensor] = None,
                      scale: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.chunk_linear_attn(q, k, v, scale=scale, initial_state=initial_state, output_final_state=True,
                                      normalize=False)
    return o, ht


# -- delta rule / gated delta rule --------------------------------------------------------------------------------


def fused_recurrent_delta_rule(q: Tensor, k: Tensor, v: Tensor, beta: Tensor, initial_state: Optional[Tensor] = None,
                               scale: Optional[float] = None, use_qk_l2norm_in_kernel: bool = False,
                               cu_seqlens: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_delta_rule(q, k, v, beta, scale=scale, initial_state=initial_state,
                                               output_final_state=True,
                                               use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, cu_seqlens=cu_seqlens)
    return o, ht


def fused_recurrent_delta_rule_ref(q, k, v, beta, initial_state=None, scale=None, use_qk_l2norm_in_kernel=False,
                                   cu_seqlens=None):
    scale = k.shape[-1] ** -0.5 if scale is None else scale
    o, ht = _delta_recurrence(q, k, v, beta, scale, h0=initial_state, l2norm_qk=use_qk_l2norm_in_kernel,
                              cu_seqlens=cu_seqlens)
    return o.to(v.dtype), ht


def _delta_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16, h0=True, scale=None, l2=False, varlen=False,
                gated=False, HV=None, beta_v=False):
    def make(device):
        r = Inputs(device)
        bsz = 1 if varlen else B
        q, k, v = _att_inputs(r, dtype, bsz, T, H, K, V, HV)
        if not l2:  # the delta rule needs unit keys (the kernel normalizes them when asked)
            q, k = F.normalize(q.float(), dim=-1).to(dtype), F.normalize(k.float(), dim=-1).to(dtype)
        hv = HV or H
        beta = r.rand(bsz, T, hv, V, dtype=dtype) if beta_v else r.rand(bsz, T, hv, dtype=dtype)
        N = 2 if varlen else B
        h = r.randn(N, hv, K, V) if h0 else None
        cu = torch.tensor([0, 5, T], device=device) if varlen else None
        if gated:
            return (q, k, v, _decay(r, bsz, T, hv).to(device), beta, h, scale, l2, cu)
        return (q, k, v, beta, h, scale, l2, cu)
    return _case(id, make, dtype)


def fused_recurrent_gated_delta_rule(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor,
                                     initial_state: Optional[Tensor] = None, scale: Optional[float] = None,
                                     use_qk_l2norm_in_kernel: bool = False,
                                     cu_seqlens: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_gated_delta_rule(q, k, v, g, beta=beta, scale=scale,
                                                     initial_state=initial_state, output_final_state=True,
                                                     use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                                                     cu_seqlens=cu_seqlens)
    return o, ht


def gated_delta_rule_ref(q, k, v, g, beta, initial_state=None, scale=None, use_qk_l2norm_in_kernel=False,
                         cu_seqlens=None):
    scale = k.shape[-1] ** -0.5 if scale is None else scale
    o, ht = _delta_recurrence(q, k, v, beta, scale, g=g, h0=initial_state, l2norm_qk=use_qk_l2norm_in_kernel,
                              cu_seqlens=cu_seqlens)
    return o.to(v.dtype), ht


def chunk_gated_delta_rule(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor,
                           initial_state: Optional[Tensor] = None, scale: Optional[float] = None,
                           use_qk_l2norm_in_kernel: bool = False,
                           cu_seqlens: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.chunk_gated_delta_rule(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                                           output_final_state=True, use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel,
                                           cu_seqlens=cu_seqlens)
    return o, ht


# -- hgrn ---------------------------------------------------------------------------------------------------------


def fused_recurrent_hgrn(x: Tensor, g: Tensor, initial_state: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_hgrn(x, g, initial_state=initial_state, output_final_state=True)
    return o, ht


def chunk_hgrn(x: Tensor, g: Tensor, initial_state: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_chunk_hgrn(x, g, initial_state=initial_state, output_final_state=True)
    return o, ht


def chunk_hgrn_ref(x, g, initial_state=None):
    B, T, D = x.shape
    h = initial_state.float().clone() if initial_state is not None else x.new_zeros(B, D, dtype=torch.float32)
    o = torch.empty(B, T, D, device=x.device)
    for t in range(T):
        h = g[:, t].float().exp() * h + x[:, t].float()
        o[:, t] = h
    return o.to(x.dtype), h


def fused_recurrent_hgrn_ref(x, g, initial_state=None):
    o, h = chunk_hgrn_ref(x, g, initial_state)
    return o, h.to(x.dtype)  # the recurrent kernel keeps its final state in the input's dtype


def _hgrn_case(id, dtype=f32, *, B=2, T=20, D=40, h0=True):
    def make(device):
        r = Inputs(device)
        return (r.randn(B, T, D, dtype=dtype), _decay(r, B, T, D, dtype=dtype).to(device),
                r.randn(B, D) if h0 else None)
    return _case(id, make, dtype)


# -- rwkv6 / rwkv7 ------------------------------------------------------------------------------------------------


def fused_recurrent_rwkv6(r: Tensor, k: Tensor, v: Tensor, w: Tensor, u: Tensor,
                          initial_state: Optional[Tensor] = None, scale: Optional[float] = None,
                          reverse: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_rwkv6(r, k, v, w, u, scale=scale, initial_state=initial_state,
                                          output_final_state=True, reverse=reverse)
    return o, ht


def rwkv6_ref(r, k, v, w, u, initial_state=None, scale=None, reverse=False):
    scale = r.shape[-1] ** -0.5 if scale is None else scale
    o, ht = _gated_recurrence(r, k, v, scale, gk=w, h0=initial_state, reverse=reverse, u=u)
    return o.to(v.dtype), ht


def _rwkv6_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16, h0=True, scale=None, reverse=False,
                with_reverse=True):
    def make(device):
        rr = Inputs(device)
        q, k, v = _att_inputs(rr, dtype, B, T, H, K, V)
        w = _decay(rr, B, T, H, K, dtype=dtype).to(device)
        args = (q, k, v, w, rr.randn(H, K, dtype=dtype, scale=0.5), rr.randn(B, H, K, V) if h0 else None, scale)
        return (*args, reverse) if with_reverse else args
    return _case(id, make, dtype)


def chunk_rwkv6(r: Tensor, k: Tensor, v: Tensor, w: Tensor, u: Tensor, initial_state: Optional[Tensor] = None,
                scale: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.chunk_rwkv6(r, k, v, w, u, scale=scale, initial_state=initial_state, output_final_state=True)
    return o, ht


def fused_recurrent_rwkv7(r: Tensor, w: Tensor, k: Tensor, v: Tensor, a: Tensor, b: Tensor,
                          initial_state: Optional[Tensor] = None, scale: float = 1.0) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.fused_recurrent_rwkv7(r, w, k, v, a, b, scale=scale, initial_state=initial_state,
                                          output_final_state=True)
    return o, ht


def rwkv7_ref(r, w, k, v, a, b, initial_state=None, scale=1.0):
    """S_t = S_{t-1} diag(exp(w_t)) + (S_{t-1} a_t) b_t^T + v_t k_t^T in [V, K] terms; here per head in [K, V]."""
    B, T, H, K = r.shape
    V = v.shape[-1]
    rf, wf, kf, vf, af, bf = (x.float() for x in (r, w, k, v, a, b))
    o = torch.zeros(B, T, H, V, device=r.device)
    S = initial_state.float().clone() if initial_state is not None else torch.zeros(B, H, K, V, device=r.device)
    for t in range(T):
        sa = (S * af[:, t, :, :, None]).sum(-2)  # a_t^T S: [B, H, V]
        S = S * wf[:, t].exp()[..., None] + bf[:, t, :, :, None] * sa[:, :, None, :] \
            + kf[:, t, :, :, None] * vf[:, t, :, None, :]
        o[:, t] = (S * rf[:, t, :, :, None] * scale).sum(-2)
    return o.to(v.dtype), S


def _rwkv7_case(id, dtype=f32, *, B=2, T=12, H=2, K=16, V=16, h0=True, scale=1.0):
    def make(device):
        rr = Inputs(device)
        q, k, v = _att_inputs(rr, dtype, B, T, H, K, V)
        w = -torch.exp(rr.randn(B, T, H, K) - 1.0).to(dtype=dtype)  # log decays, as RWKV-7 makes them
        kk = F.normalize(rr.randn(B, T, H, K), dim=-1)
        a_gate = torch.sigmoid(rr.randn(B, T, H, K))
        return (q, w, k, v, (-kk).to(dtype), (kk * a_gate).to(dtype), rr.randn(B, H, K, V) if h0 else None, scale)
    return _case(id, make, dtype)


def chunk_rwkv7(r: Tensor, w: Tensor, k: Tensor, v: Tensor, a: Tensor, b: Tensor,
                initial_state: Optional[Tensor] = None, scale: float = 1.0) -> Tuple[Tensor, Tensor]:
    o, ht = fla_ops.chunk_rwkv7(r, w, k, v, a, b, scale=scale, initial_state=initial_state, output_final_state=True)
    return o, ht


# -- based / softmax attention --------------------------------------------------------------------------------------


def parallel_based(q: Tensor, k: Tensor, v: Tensor, scale: Optional[float] = None, use_norm: bool = True) -> Tensor:
    return fla_ops.parallel_based(q, k, v, scale=scale, use_norm=use_norm)


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


def _based_case(id, dtype=f32, *, B=2, T=24, H=2, K=16, V=16, norm=True):
    def make(device):
        r = Inputs(device)
        q, k, v = _att_inputs(r, dtype, B, T, H, K, V)
        return (q, k, v, None, norm)
    return _case(id, make, dtype)


def parallel_attn(q: Tensor, k: Tensor, v: Tensor, g: Optional[Tensor] = None, scale: Optional[float] = None,
                  window_size: Optional[int] = None) -> Tensor:
    return fla_ops.parallel_attn(q, k, v, g, scale=scale, window_size=window_size)


def parallel_attn_ref(q, k, v, g=None, scale=None, window_size=None):
    scale = k.shape[-1] ** -0.5 if scale is None else scale
    HQ = q.shape[2]
    kf, vf = _expand_heads(k, HQ).float(), _expand_heads(v, HQ).float()
    qf = q.float()
    s = torch.einsum("bthk,bshk->bhts", qf, kf) * scale
    T = q.shape[1]
    i, j = torch.arange(T, device=q.device)[:, None], torch.arange(T, device=q.device)[None, :]
    allowed = j <= i
    if window_size is not None:
        allowed = allowed & (j > i - window_size)
    if g is not None:
        G = g.float().cumsum(1).transpose(1, 2)  # [B, HQ, T]
        s = s + G[..., :, None] - G[..., None, :]
    p = torch.softmax(s.masked_fill(~allowed, float("-inf")), -1)
    return torch.einsum("bhts,bshv->bthv", p, vf).to(q.dtype)


def _attn_case(id, dtype=f32, *, B=2, T=24, HQ=4, H=2, K=16, V=16, gate=False, window=None):
    def make(device):
        r = Inputs(device)
        q = r.randn(B, T, HQ, K, dtype=dtype)
        k, v = r.randn(B, T, H, K, dtype=dtype), r.randn(B, T, H, V, dtype=dtype)
        return (q, k, v, _decay(r, B, T, HQ).to(device) if gate else None, None, window)
    return _case(id, make, dtype)


# ================================================================================================
# The entries
# ================================================================================================

_LRU_TILING = "; block sizes from @lru_cache'd _fused_recurrent_tiling(K, V) (called with the sizes)"
_GATED_RECURRENT_NOTES = ("@input_guard (.contiguous() of every tensor, a device context), "
                          "{}.apply, a final-state allocation chosen by output_final_state, "
                          "scale defaulting to K ** -0.5 (float math on a size), @triton.heuristics on None pointers")

ENTRIES = [
    # -- norms -----------------------------------------------------------------------------------------------
    Entry("layer_norm", "fla.modules.layernorm.layer_norm (LayerNormFunction.apply)", layer_norm, layer_norm_ref, [
        _ln_case("f32-3d", (2, 4, 32)),
        _ln_case("f16", (6, 64), f16),
        _ln_case("f32-strided", (6, 40), layout=strided),
        _ln_case("f32-residual", (3, 5, 48), residual=True),
        _ln_case("f32-no-affine", (4, 24), affine=False),
        _ln_case("bf16", (4, 64), bf16),
    ], namespace=NS,
        notes="autograd.Function.apply with @input_guard (.contiguous() per argument, custom_device_ctx), "
              "x.reshape(-1, D // num_groups), @dispatch behind torch.compiler.disable, @triton.autotune with a "
              "grid lambda, do_not_specialize=['T'], None weight/bias/residual as pointers, returns y.reshape"),
    Entry("rms_norm_prenorm", "fla.modules.layernorm.rms_norm(prenorm=True)", rms_norm_prenorm, rms_norm_prenorm_ref,
          [
              _rms_prenorm_case("f32-residual", (2, 5, 32)),
              _rms_prenorm_case("f16-residual", (6, 48), f16),
              _rms_prenorm_case("f16-fp32-residual-out", (6, 48), f16, residual=False, fp32_residual=True),
              _rms_prenorm_case("f32-no-residual", (4, 32), residual=False),
          ], namespace=NS,
        notes="two outputs; the residual output's dtype follows residual/residual_in_fp32; without a residual "
              "(and no fp32 residual) the wrapper returns its own input x (reshaped) as the second output"),
    Entry("group_norm", "fla.modules.layernorm.group_norm", group_norm, group_norm_ref, [
        _gn_case("f32-4groups", (2, 3, 32), 4),
        _gn_case("f32-rms-2groups", (5, 48), 2, rms=True),
        _gn_case("f16", (4, 64), 8, f16),
        _gn_case("f32-strided", (6, 40), 2, layout=strided),
    ], namespace=NS, notes="int num_groups divides the row (a ValueError guard), rows of D // G, weight of G * D"),
    Entry("layer_norm_fwd", "fla.modules.layernorm.layer_norm_fwd", layer_norm_forward, layer_norm_forward_ref, [
        _lnf_case("f32", 10, 32),
        _lnf_case("f32-rms-nobias", 7, 48, rms=True, bias=False),
        _lnf_case("f16-out-f32", 6, 64, f16, out_dtype=f32),
        _lnf_case("f32-row-kernel", 3, 640),
        _lnf_case("bf16", 4, 64, bf16),
    ], namespace=NS,
        notes="the plain forward wrapper: `T, D, G = *x.shape, num_groups`, asserts on shapes, "
              "`if D <= 512` picks the autotuned block kernel (grid lambda) or the row kernel, Optional[dtype] "
              "out_dtype, returns (y, mean or None, rstd, x)"),
    Entry("layer_norm_linear", "fla.modules.layernorm.layer_norm_linear (LayerNormLinearFunction.apply)",
          layer_norm_linear, layer_norm_linear_ref, [
              _lnl_case("f32"),
              _lnl_case("f32-rms-nobias", rms=True, bias=False),
              _lnl_case("f16", f16),
          ], namespace=NS, tol_scale=3,
        notes="norm kernel then F.linear (an ATen op on the kernel's output), torch.is_autocast_enabled(), "
              "linear_weight.to(dtype)"),
    Entry("layer_norm_gated", "fla.modules.fused_norm_gate.layer_norm_gated (LayerNormGatedFunction.apply)",
          layer_norm_gated, layer_norm_gated_ref, [
              _lng_case("f32-swish", (2, 5, 32)),
              _lng_case("f32-sigmoid-nobias", (6, 48), activation="sigmoid", bias=False),
              _lng_case("f16", (4, 64), f16),
              _lng_case("f32-strided", (6, 40), layout=strided),
              _lng_case("f32-wide-row-kernel", (3, 600)),
          ], namespace=NS,
        notes="str activation as a constexpr, @triton.heuristics (four None checks) over @triton.autotune, "
              "D <= 512 picks the autotuned kernel or the row kernel"),
    Entry("rms_norm_gated_prenorm", "fla.modules.fused_norm_gate.rms_norm_gated(residual, prenorm=True)",
          rms_norm_gated_prenorm, rms_norm_gated_prenorm_ref, [
              _rmsg_case("f32", (2, 5, 32)),
              _rmsg_case("f16-sigmoid", (6, 48), f16, activation="sigmoid"),
          ], namespace=NS, notes="a residual input, residual_out allocated by the residual's dtype, two outputs"),
    Entry("layer_norm_gated_fwd", "fla.modules.fused_norm_gate.layer_norm_gated_fwd", layer_norm_gated_forward,
          layer_norm_gated_forward_ref, [
              _lngf_case("f32", 10, 32),
              _lngf_case("f32-rms-sigmoid", 6, 48, activation="sigmoid", rms=True),
              _lngf_case("f16", 6, 64, f16),
              _lngf_case("f32-row-kernel", 3, 520),
          ], namespace=NS, notes="the plain forward wrapper: bucketed NB = cdiv(T, 65536) autotune key, two kernels"),
    Entry("layernorm_gated", "fla.modules.layernorm_gated.layernorm_fn (LayerNormFn.apply)", layernorm_gated,
          layernorm_gated_ref, [
              _lngrp_case("f32-gate-after-norm", (2, 5, 32)),
              _lngrp_case("f32-gate-before-groups", (6, 48), group_size=16, before=False),
              _lngrp_case("f32-no-gate-nobias", (4, 32), gate=False, bias=False),
              _lngrp_case("f16-groups", (4, 64), f16, group_size=32),
              _lngrp_case("f32-strided", (6, 40), layout=strided),
          ], namespace=NS,
        notes="Optional[int] group_size (None -> D), `if x.stride(-1) != 1: x.contiguous()`, asserts on strides, "
              "grid (T, G), num_warps from a size, @triton.heuristics without autotune"),
    Entry("rmsnorm_gated", "fla.modules.layernorm_gated.rmsnorm_fn (LayerNormFn.apply)", rmsnorm_gated,
          rmsnorm_gated_ref, [
              _lngrp_case("f32", (2, 5, 32)),
              _lngrp_case("f32-groups-before", (6, 48), group_size=24, before=False, bias=False),
              _lngrp_case("f16", (4, 64), f16),
          ], namespace=NS, notes="as layernorm_gated, is_rms_norm=True (mean allocation skipped: None pointer)"),
    Entry("l2norm", "fla.modules.l2norm.l2norm (L2NormFunction.apply)", l2norm, l2norm_ref, [
        _l2_case("f32", (2, 5, 32)),
        _l2_case("f16-out-f32", (6, 64), f16, out=f32),
        _l2_case("f32-row-kernel", (3, 600)),
        _l2_case("f32-strided", (6, 40), layout=strided),
        _l2_case("bf16", (4, 64), bf16),
    ], namespace=NS,
        notes="x.view(-1, D) after @input_guard's .contiguous(), Optional[dtype] output_dtype, fla_cache_autotune "
              "(fla's CachedAutotuner subclass) on the block kernel, triton.autotune on the row kernel"),
    Entry("l2norm_fwd", "fla.modules.l2norm.l2norm_fwd", l2norm_forward, l2norm_forward_ref, [
        _l2_case("f32", (2, 5, 32), with_dtype=False),
        _l2_case("f16", (6, 64), f16, with_dtype=False),
        _l2_case("f32-row-kernel", (3, 600), with_dtype=False),
    ], namespace=NS, notes="the plain wrapper: x.view on the input (needs contiguity), rstd.view(shape[:-1])"),
    # -- activations -------------------------------------------------------------------------------------
    Entry("swiglu", "fla.modules.activations.swiglu (SwiGLUFunction.apply)", swiglu, swiglu_ref, [
        _act_case("f32", (2, 5, 32), n=2),
        _act_case("f16", (7, 50), f16, n=2),
        _act_case("f32-strided", (6, 40), n=2, layout=strided),
        _act_case("f32-row-slice", (6, 40), n=2, layout=_row_slice),
        _act_case("bf16", (4, 64), bf16, n=2),
    ], namespace=NS,
        notes="@input_guard(no_guard_contiguous=True); prepare_input walks x.stride() to keep a row-strided view "
              "(or copies), torch.compiler.is_compiling(), empty_like(memory_format=...), 30-config autotune"),
    Entry("swiglu_fwdbwd", "fla.modules.activations.ops.swiglu_fwdbwd(use_weight=True)", swiglu_forward_backward,
          swiglu_forward_backward_ref, [
              _act_case("f32", (2, 5, 32), n=3),
              _act_case("f16", (7, 50), f16, n=3),
              _act_case("f32-row-slice", (6, 40), n=3, layout=_row_slice),
          ], namespace=NS,
        notes="the backward's plain wrapper: three outputs, @triton.heuristics(HAS_WEIGHT) under autotune"),
    Entry("sigmoid", "fla.modules.activations.sigmoid (SigmoidFunction.apply)", sigmoid,
          lambda x: torch.sigmoid(x.float()).to(x.dtype), [
              _act_case("f32", (2, 5, 32)),
              _act_case("f16", (7, 50), f16),
              _act_case("f32-strided", (6, 40), layout=strided),
          ], namespace=NS, notes="elementwise over numel() with a row stride, autotuned block"),
    Entry("logsigmoid", "fla.modules.activations.logsigmoid (LogSigmoidFunction.apply)", logsigmoid, logsigmoid_ref, [
        _act_case("f32", (2, 5, 32), extra=(1.0,)),
        _act_case("f16-temperature", (7, 50), f16, extra=(2.0,)),
        _act_case("f32-row-slice", (6, 40), extra=(0.5,), layout=_row_slice),
    ], namespace=NS, notes="float temperature as a runtime scalar argument"),
    Entry("swish", "fla.modules.activations.swish (SwishFunction.apply)", swish,
          lambda x: F.silu(x.float()).to(x.dtype), [
              _act_case("f32", (2, 5, 32)),
              _act_case("f16", (7, 50), f16),
          ], namespace=NS),
    Entry("elu_p1_fwd", "fla.modules.activations.ops.elu_p1_fwd", elu_p1,
          lambda x: (F.elu(x.float()) + 1).to(x.dtype), [
              _act_case("f32", (2, 5, 32)),
              _act_case("f16", (7, 50), f16),
          ], namespace=NS,
        cpu_skip="Triton's interpreter does not implement libdevice.exp (the kernel's negative branch): the call "
                 "returns None there (AttributeError: 'NoneType' object has no attribute 'type'); CUDA only",
        notes="the plain forward wrapper (fla's public elu_p1 computes in torch on CPU and calls "
              "ELUPlusOneFunction.apply on CUDA), libdevice.exp in the kernel"),
    Entry("sigmoidglu", "fla.modules.activations.sigmoidglu (SigmoidGLUFunction.apply)", sigmoidglu,
          lambda x, y: (torch.sigmoid(x.float()) * y.float()).to(x.dtype), [
              _act_case("f32", (2, 5, 32), n=2),
              _act_case("f16", (7, 50), f16, n=2),
          ], namespace=NS, notes="a @torch.compiler.disable'd plain wrapper (not @dispatch)"),
    Entry("powglu", "fla.modules.activations.powglu (PowGLUFunction.apply)", powglu, powglu_ref, [
        _act_case("f32", (2, 5, 32), n=2, extra=(3.0,)),
        _act_case("f16-power2", (7, 50), f16, n=2, extra=(2.0,)),
    ], namespace=NS, notes="float power as a runtime scalar"),
    Entry("swiglu_linear", "fla.modules.activations.swiglu_linear (SwiGLULinearFunction.apply)", swiglu_linear,
          swiglu_linear_ref, [
              _swiglu_linear_case("f32"),
              _swiglu_linear_case("f32-nobias", bias=False),
              _swiglu_linear_case("f16", f16),
          ], namespace=NS, tol_scale=3,
        notes="@dispatch -> Function.apply with @autocast_custom_fwd (torch.amp.custom_fwd), swiglu kernel then "
              "F.linear"),
    # -- losses ------------------------------------------------------------------------------------------
    Entry("cross_entropy", "fla.modules.fused_cross_entropy.cross_entropy_loss (FusedCrossEntropyFunction.apply)",
          cross_entropy, cross_entropy_ref, [
              _ce_case("f32"),
              _ce_case("f16", f16),
              _ce_case("f32-smoothing-zloss", smoothing=0.1, z=1e-3),
              _ce_case("f32-logit-scale", scale=0.5),
              _ce_case("f32-softcap", softcap=5.0, gpu_only=LIBDEVICE_TANH),
              _ce_case("f32-strided", V=64, layout=strided),
              _ce_case("bf16", bf16),
          ], namespace=NS, tol_scale=10,
        notes="float/Optional[float] arguments as tl.constexpr (label_smoothing, logit_scale, softcap: one variant "
              "per value), a data-dependent branch in the kernel on target, ctx.mark_non_differentiable, "
              "process_group None, split/reduce path chosen by V"),
    Entry("cross_entropy_fwd", "fla.modules.fused_cross_entropy.cross_entropy_fwd", cross_entropy_forward,
          cross_entropy_forward_ref, [
              _ce_case("f32"),
              _ce_case("f16-smoothing", f16, smoothing=0.2),
              _ce_case("f32-strided", V=64, layout=strided),
          ], namespace=NS, tol_scale=10,
        notes="the plain wrapper: `if logits.stride(-1) != 1: contiguous()`, returns ints (total_classes, "
              "class_start_idx) after the tensors"),
    Entry("kl_div", "fla.modules.fused_kl_div.fused_kl_div_loss (FusedKLDivLossFunction.apply)", kl_div, kl_div_ref, [
        _kl_case("f32"),
        _kl_case("f32-sum", reduction="sum"),
        _kl_case("f16", f16),
    ], namespace=NS, tol_scale=10,
        notes="torch.is_grad_enabled(), ctx.needs_input_grad, a Python loop over row chunks (sizes), F.linear per "
              "chunk, slices of an allocation passed to the kernel, torch.mm into dx[start:end], torch.addmm(out=), "
              "loss.sum(); str reduction as a constexpr"),
    Entry("fused_linear_cross_entropy",
          "fla.modules.fused_linear_cross_entropy.fused_linear_cross_entropy_loss (Function.apply)",
          fused_linear_cross_entropy, fused_linear_cross_entropy_ref, [
              _flce_case("f32-mean"),
              _flce_case("f32-sum-nobias", reduction="sum", bias=False),
              _flce_case("f32-smoothing-2chunks", smoothing=0.1, chunks=2),
              _flce_case("f16", f16),
          ], namespace=NS, tol_scale=20,
        notes="target.ne(ignore).sum().clamp_min(1) kept as a tensor (no .item()), a chunk loop with "
              "cross_entropy_fwd + in-place cross_entropy_bwd on each chunk's logits, dx[start:end] = mm, "
              "torch.addmm(out=dw), torch.add(out=db)"),
    Entry("fused_linear_cross_entropy_fwd", "fla.modules.fused_linear_cross_entropy.fused_linear_cross_entropy_fwd",
          fused_linear_cross_entropy_forward, fused_linear_cross_entropy_forward_ref, [
              _flce_case("f32-mean", with_scale=False),
              _flce_case("f32-sum-nobias", reduction="sum", bias=False, with_scale=False),
              _flce_case("f16", f16, with_scale=False),
          ], namespace=NS, tol_scale=20,
        notes="the plain wrapper: returns the loss and the precomputed gradients dx, dw (fp32 accumulation cast back)"),
    # -- rotary, token shift, conv, bitlinear ------------------------------------------------------------
    Entry("rotary_embedding", "fla.modules.rotary.rotary_embedding (RotaryEmbeddingFunction.apply)",
          rotary_embedding, rotary_embedding_ref, [
              _rotary_case("f32"),
              _rotary_case("f16", f16),
              _rotary_case("f32-interleaved", interleaved=True),
              _rotary_case("f32-partial-offset", R=8, offset=3),
              _rotary_case("f32-varlen", varlen=True),
              _rotary_case("bf16", bf16),
          ], namespace=NS, trace_runs_body=VARLEN_BY_DATA,
        notes="@functools.cache'd get_multiprocessor_count(x.device.index) (a device query) in the block size, "
              "y[..., R2:].copy_(x[..., R2:]) for partial rotary, int-or-Tensor seqlen_offsets (isinstance), "
              "cu_seqlens -> prepare_chunk_indices (@tensor_cache'd, reads cu_seqlens)"),
    Entry("rotary_embedding_fwdbwd", "fla.modules.rotary.rotary_embedding_fwdbwd (tensor offsets)",
          rotary_embedding_forward, rotary_embedding_forward_ref, [
              _rotary_fwd_case("f32"),
              _rotary_fwd_case("f32-conjugate-interleaved", interleaved=True, conjugate=True),
              _rotary_fwd_case("f16-partial", f16, R=8),
          ], namespace=NS,
        notes="the plain wrapper with per-sequence Tensor offsets: cu_seqlens-free torch._assert_async(torch.all("
              "T + offsets <= TR)), asserts on dtypes"),
    Entry("token_shift", "fla.modules.token_shift.token_shift (TokenShift.apply)", token_shift, token_shift_ref, [
        _token_shift_case("f32", (2, 8, 32)),
        _token_shift_case("f32-cache", (2, 8, 32), cache=True),
        _token_shift_case("f16", (3, 5, 48), f16),
    ], namespace=NS,
        notes="@torch.compiler.disable entry, grid (N, T) from sizes, a short/long kernel by T <= 4096, "
              "output_cache allocation, @triton.heuristics + autotune"),
    Entry("causal_conv1d", "fla.modules.causal_conv1d.causal_conv1d (CausalConv1dFunction.apply)", causal_conv1d,
          causal_conv1d_ref, [
              _conv_case("f32-swish"),
              _conv_case("f32-state-residual", state=True, residual=True, act=None),
              _conv_case("f16", f16),
              _conv_case("f32-strided-nobias", bias=False, layout=strided),
          ], namespace=NS, tol_scale=3,
        notes="@input_guard(no_guard_contiguous=['x']) on the entry and on the forward, @deprecate_kwarg, "
              "einops.rearrange, x.stride() as kernel arguments, fla_cache_autotune with a grid lambda, "
              "a second launch (causal_conv1d_update_states) for the final state, lazy imports of CUDA backends"),
    Entry("causal_conv1d_update", "fla.modules.causal_conv1d.ops.causal_conv1d_update", causal_conv1d_update,
          causal_conv1d_update_ref, [
              _conv_update_case("f32"),
              _conv_update_case("f32-swish-nobias", bias=False, act="swish"),
              _conv_update_case("f16", f16),
          ], namespace=NS, mutates_args=("cache",),
        notes="updates `cache` in place (fla_cache_autotune with restore_value=['cache']) and returns it, "
              "branches on x.dim()/x.shape[0] for strides"),
    Entry("bit_linear", "fla.modules.fused_bitlinear.bit_linear (LayerNormLinearQuantFunction.apply)", bit_linear,
          bit_linear_ref, [
              _bitlinear_case("f32"),
              _bitlinear_case("f32-nobias-nonorm", bias=False, norm=False),
              _bitlinear_case("f16", f16),
          ], namespace=NS, tol_scale=3,
        notes="weight_quant in torch (abs().mean(), round, clamp_) after the kernel, @autocast_custom_fwd, "
              "torch.get_autocast_dtype('cuda')"),
    # -- fla.ops.utils -----------------------------------------------------------------------------------
    Entry("chunk_local_cumsum", "fla.ops.utils.chunk_local_cumsum", local_cumsum, local_cumsum_ref, [
        _cumsum_case("f32-scalar", (2, 40, 3)),
        _cumsum_case("f32-scalar-reverse-scaled", (2, 40, 3), reverse=True, scale=1.4426950216),
        _cumsum_case("f32-vector", (2, 40, 2, 24), chunk=32),
        _cumsum_case("f16-vector-reverse-out-f16", (1, 20, 2, 16), f16, reverse=True, out=None),
    ], namespace=NS,
        notes="@input_guard + @dispatch, dispatch on len(g.shape) to the scalar or vector wrapper, "
              "chunk_size asserted a power of 2 via bit_length(), fla_cache_autotune, Optional[float] scale"),
    Entry("chunk_global_cumsum", "fla.ops.utils.chunk_global_cumsum", global_cumsum, global_cumsum_ref, [
        _global_cumsum_case("f32-scalar", (2, 30, 3)),
        _global_cumsum_case("f32-vector-reverse", (2, 30, 2, 40), reverse=True),
        _global_cumsum_case("f32-varlen-scaled", (1, 30, 2), scale=0.5, varlen=True),
        _global_cumsum_case("f16-out-f16", (2, 20, 2, 16), f16, out=None),
    ], namespace=NS, notes="N = len(cu_seqlens) - 1 (a size, not data), grid from N * H"),
    Entry("softmax_fwd", "fla.ops.utils.softmax_fwd", softmax, softmax_ref, [
        _act_case("f32", (2, 5, 40), extra=(torch.float,)),
        _act_case("f16-out-f16", (7, 50), f16, extra=(None,)),
    ], namespace=NS, notes="x.view(-1, D) of the input, p.view(*shape)"),
    Entry("logsumexp_fwd", "fla.ops.utils.logsumexp_fwd", logsumexp, logsumexp_ref, [
        _act_case("f32", (2, 5, 40), extra=(None, None)),
        _act_case("f16-scaled", (7, 50), f16, extra=(0.5, torch.float16)),
    ], namespace=NS,
        notes="@triton.heuristics(HAS_SCALE) over autotune, z.logsumexp(-1) (ATen) after the kernel, .view, .to"),
    Entry("solve_tril", "fla.ops.utils.solve_tril", solve_tril, solve_tril_ref, [
        _solve_tril_case("f32-16", 32, 16),
        _solve_tril_case("f32-32", 40, 32),
        _solve_tril_case("f32-64", 64, 64),
        _solve_tril_case("f16-16-out-f16", 32, 16, f16, out=None),
    ], namespace=NS, tol_scale=3,
        notes="picks one of three kernels by A.shape[-1] (16/32/64), IS_TMA_SUPPORTED (env + device) as a "
              "constexpr, torch.zeros_like output"),
    Entry("mean_pooling", "fla.ops.utils.mean_pooling (MeanPoolingFunction.apply)", mean_pooling, mean_pooling_ref, [
        _pool_case("f32"),
        _pool_case("f16", f16),
        _pool_case("f32-varlen", varlen=True),
    ], namespace=NS, trace_runs_body=VARLEN_BY_DATA,
        notes="output size cdiv(T, chunk) from sizes; with cu_seqlens, len(prepare_chunk_indices(...)) (data) "
              "sizes the output"),
    Entry("matmul", "fla.ops.utils.matmul", matmul, matmul_ref, [
        _matmul_case("f32-2d", (40,), 24, 48),
        _matmul_case("f32-3d-relu", (2, 20), 24, 40, activation="relu"),
        _matmul_case("f16-leaky-relu", (40,), 32, 48, f16, activation="leaky_relu"),
        _matmul_case("f32-sigmoid-strided", (32,), 16, 24, activation="sigmoid", layout=strided),
    ], namespace=NS, tol_scale=3,
        notes="@input_guard, a.unsqueeze(0).contiguous() for 2-D inputs, c.squeeze(0), allow_tf32 from the dtype, "
              "@triton.heuristics over an 8-config autotune, str activation as a constexpr"),
    Entry("addmm", "fla.ops.utils.addmm", addmm, addmm_ref, [
        _addmm_case("f32", 40, 24, 48),
        _addmm_case("f32-bias-row", 40, 24, 48, bias_only=True),
        _addmm_case("f16", 32, 32, 48, f16),
    ], namespace=NS, tol_scale=3, notes="X_DIM=x.dim() as a constexpr, None alpha/beta pointers"),
    Entry("pack_sequence", "fla.ops.utils.pack_sequence (PackSequenceFunction.apply)", pack_sequence,
          pack_sequence_ref, [
              _pack_case("f32-left"),
              _pack_case("f32-right", side="right"),
              _pack_case("f16", f16),
          ], namespace=NS, trace_runs_body="the trace learns cu_seqlens[-1].item() from one run of the body",
        notes="the output's size is cu_seqlens[-1].item() (data), str padding_side as a constexpr"),
    Entry("unpack_sequence", "fla.ops.utils.unpack_sequence (UnpackSequenceFunction.apply)", unpack_sequence,
          unpack_sequence_ref, [
              _unpack_case("f32-left"),
              _unpack_case("f32-right", side="right"),
          ], namespace=NS,
        notes="List[int] desired_shape sizes torch.zeros (no .item() when given), y.numel() // (B * S)"),
    # -- fla.ops: recurrences ----------------------------------------------------------------------------
    Entry("fused_recurrent_simple_gla", "fla.ops.fused_recurrent_simple_gla", fused_recurrent_simple_gla,
          _simple_gla_ref, [
              _simple_gla_case("f32"),
              _simple_gla_case("f32-reverse-scale", h0=False, scale=0.5, reverse=True),
              _simple_gla_case("f16", f16),
              _simple_gla_case("f32-varlen", varlen=True),
              _simple_gla_case("bf16", bf16),
          ], namespace=NS, tol_scale=5,
        notes=(_GATED_RECURRENT_NOTES.format("FusedRecurrentFunction") + _LRU_TILING
               + "; cu_seqlens: N = len(cu_seqlens) - 1")),
    Entry("chunk_simple_gla", "fla.ops.chunk_simple_gla (ChunkSimpleGLAFunction.apply)", chunk_simple_gla,
          _simple_gla_ref, [
              _simple_gla_case("f32", T=40),
              _simple_gla_case("f16", f16, T=40),
              _simple_gla_case("f32-varlen", T=40, varlen=True),
              _simple_gla_case("bf16", bf16, T=40),
          ], namespace=NS, tf32=True,
              tol_scale=20, exact=False, cpu_skip=RANGE_INDEX_TO.format("fla/ops/common/chunk_h.py:97"),
        trace_runs_body=VARLEN_BY_DATA,
        notes="@torch.compiler.disable entry, chunk_size.bit_length(), @autocast_custom_fwd, chunk_local_cumsum "
              "then chunk_fwd_h then chunk_fwd_o (three autotuned launches; chunk_fwd_h's 48 configs come from a block "
              "list chosen at import by check_shared_mem()), "
              "check_shared_mem (a functools.cache'd device query), cu_seqlens -> prepare_chunk_indices (reads data)"),
    Entry("parallel_simple_gla", "fla.ops.parallel_simple_gla (ParallelSimpleGLAFunction.apply)",
          parallel_simple_gla, parallel_simple_gla_ref, [
              _parallel_case("f32"),
              _parallel_case("f32-nogate-scale", gate=False, scale=0.3),
              _parallel_case("f16", f16),
          ], namespace=NS, tf32=True, tol_scale=10, exact=False,
        notes="chunk_local_cumsum on g inside, output_attentions False -> returns (o, None)"),
    Entry("fused_recurrent_gla", "fla.ops.fused_recurrent_gla", fused_recurrent_gla, fused_recurrent_gla_ref, [
        _gla_case("f32"),
        _gla_case("f32-gv-reverse", gv=True, h0=False, reverse=True),
        _gla_case("f16", f16),
    ], namespace=NS, tol_scale=5, notes=_GATED_RECURRENT_NOTES.format("FusedRecurrentFunction") + _LRU_TILING),
    Entry("chunk_gla", "fla.ops.chunk_gla (ChunkGLAFunction.apply)", chunk_gla, chunk_gla_ref, [
        _gla_case("f32", T=40, with_gv=False),
        _gla_case("f16", f16, T=40, with_gv=False),
    ], namespace=NS, tf32=True,
        tol_scale=20, exact=False, cpu_skip=RANGE_INDEX_TO.format("fla/ops/common/chunk_h.py:97"),
        notes="vector chunk_local_cumsum, intra-chunk attention kernels, chunk_fwd_h, several autotuned launches"),
    Entry("fused_recurrent_retention", "fla.ops.fused_recurrent_retention", fused_recurrent_retention, retention_ref, [
        _retention_case("f32"),
        _retention_case("f32-noh0-scale", h0=False, scale=0.5),
        _retention_case("f16", f16),
    ], namespace=NS, tol_scale=5,
        notes="builds the decays in torch: (1 - 2.0 ** (-5 - torch.arange(H))).log() (a constant tensor from a "
              "size), then fused_recurrent_simple_gla"),
    Entry("chunk_retention", "fla.ops.chunk_retention", chunk_retention, retention_ref, [
        _retention_case("f32", T=40),
        _retention_case("f16", f16, T=40),
    ], namespace=NS, tf32=True,
        tol_scale=20, exact=False, cpu_skip=RANGE_INDEX_TO.format("fla/ops/common/chunk_h.py:97"),
        notes="torch.arange decays (g_gamma), then chunk_simple_gla"),
    Entry("parallel_retention", "fla.ops.parallel_retention", parallel_retention, parallel_retention_ref, [
        _case("f32", lambda d: (*_att_inputs(Inputs(d), f32, 2, 24, 3, 16, 16), None)),
        _case("f16-scale", lambda d: (*_att_inputs(Inputs(d), f16, 2, 24, 3, 16, 16), 0.5), f16),
    ], namespace=NS, tf32=True,
        tol_scale=10, exact=False, notes="constant decays from torch.arange, then parallel_simple_gla"),
    Entry("fused_recurrent_linear_attn", "fla.ops.fused_recurrent_linear_attn", fused_recurrent_linear_attn,
          linear_attn_ref, [
              _linear_attn_case("f32"),
              _linear_attn_case("f32-reverse", h0=False, reverse=True, scale=0.5),
              _linear_attn_case("f16", f16),
          ], namespace=NS, tol_scale=5,
        notes="a thin wrapper over fused_recurrent_simple_gla with g=None" + _LRU_TILING),
    Entry("fused_recurrent_linear_attn_normalized", "fla.ops.fused_recurrent_linear_attn(normalize=True)",
          fused_recurrent_linear_attn_normalized, linear_attn_normalized_ref, [
              _positive_qk_case("f32"),
              _positive_qk_case("f16", f16),
          ], namespace=NS, tol_scale=5,
        notes="StatefulNormalizeFunction.apply nested in the wrapper: chunk_global_cumsum of k, then ATen "
              "arithmetic, k_cum[0, idx] indexing; returns (o, (kv_state, z_state)): a nested tuple"),
    Entry("chunk_linear_attn", "fla.ops.chunk_linear_attn(normalize=False)", chunk_linear_attn, linear_attn_ref, [
        _linear_attn_case("f32", T=40, with_reverse=False),
        _linear_attn_case("f16", f16, T=40, with_reverse=False),
    ], namespace=NS, tf32=True,
        tol_scale=20, exact=False, cpu_skip=RANGE_INDEX_TO.format("fla/ops/common/chunk_h.py:97")),
    Entry("fused_recurrent_delta_rule", "fla.ops.fused_recurrent_delta_rule", fused_recurrent_delta_rule,
          fused_recurrent_delta_rule_ref, [
              _delta_case("f32"),
              _delta_case("f32-l2norm-in-kernel", l2=True, h0=False),
              _delta_case("f16", f16),
              _delta_case("f32-varlen", varlen=True),
          ], namespace=NS, tol_scale=5,
        notes="FusedRecurrentFunction.apply, beta None -> torch.ones_like, use_qk_l2norm_in_kernel as a constexpr"),
    Entry("fused_recurrent_gated_delta_rule", "fla.ops.fused_recurrent_gated_delta_rule",
          fused_recurrent_gated_delta_rule, gated_delta_rule_ref, [
              _delta_case("f32", gated=True),
              _delta_case("f32-grouped-value-heads", gated=True, HV=4, l2=True),
              _delta_case("f32-beta-per-value", gated=True, beta_v=True, h0=False),
              _delta_case("f16", f16, gated=True),
              _delta_case("f32-varlen", gated=True, varlen=True),
          ], namespace=NS, tol_scale=5,
        notes="HV value heads over H q/k heads, IS_BETA_HEADWISE=beta.ndim != v.ndim, many Optional tensors as "
              "None pointers (gk, gv, A_log, dt_bias), tl.range loop"),
    Entry("chunk_gated_delta_rule", "fla.ops.chunk_gated_delta_rule (ChunkGatedDeltaRuleFunction.apply)",
          chunk_gated_delta_rule, gated_delta_rule_ref, [
              _delta_case("f32", gated=True, T=40),
              _delta_case("f32-l2norm-in-kernel", gated=True, T=40, l2=True, h0=False),
              _delta_case("f16", f16, gated=True, T=40),
          ], namespace=NS, tf32=True, tol_scale=30, exact=False,
        cpu_skip=RANGE_INDEX_TO.format("fla/ops/common/chunk_delta_h.py:176"),
        notes="l2norm_fwd on q/k in the wrapper, chunk_local_cumsum, chunk_scaled_dot_kkt, solve_tril, "
              "recompute_w_u, chunk_gated_delta_rule_fwd_h, chunk_fwd_o: a pipeline of autotuned launches"),
    Entry("fused_recurrent_hgrn", "fla.ops.fused_recurrent_hgrn", fused_recurrent_hgrn, fused_recurrent_hgrn_ref, [
        _hgrn_case("f32"),
        _hgrn_case("f32-noh0", h0=False),
        _hgrn_case("f16", f16),
    ], namespace=NS, tol_scale=5, notes="elementwise recurrence, autotuned BD with a grid lambda"),
    Entry("chunk_hgrn", "fla.ops.hgrn.chunk.chunk_hgrn (ChunkHGRNFunction.apply)", chunk_hgrn, chunk_hgrn_ref, [
        _hgrn_case("f32", T=40),
        _hgrn_case("f16", f16, T=40),
    ], namespace=NS, tol_scale=5, notes="two launches (intra-chunk scan, then inter-chunk carry)"),
    Entry("fused_recurrent_rwkv6", "fla.ops.fused_recurrent_rwkv6", fused_recurrent_rwkv6, rwkv6_ref, [
        _rwkv6_case("f32"),
        _rwkv6_case("f32-reverse-scale", h0=False, reverse=True, scale=0.5),
        _rwkv6_case("f16", f16),
    ], namespace=NS, tol_scale=5, notes=_GATED_RECURRENT_NOTES.format("FusedRecurrentRWKV6Function")),
    Entry("chunk_rwkv6", "fla.ops.chunk_rwkv6 (ChunkRWKV6Function.apply)", chunk_rwkv6, rwkv6_ref, [
        _rwkv6_case("f32", T=40, with_reverse=False),
        _rwkv6_case("f16", f16, T=40, with_reverse=False),
    ], namespace=NS, tf32=True,
        tol_scale=20, exact=False, cpu_skip=RANGE_INDEX_TO.format("fla/ops/common/chunk_h.py:97")),
    Entry("fused_recurrent_rwkv7", "fla.ops.fused_recurrent_rwkv7 (-> fused_recurrent_dplr_delta_rule)",
          fused_recurrent_rwkv7, rwkv7_ref, [
              _rwkv7_case("f32"),
              _rwkv7_case("f32-noh0-scale", h0=False, scale=0.5),
              _rwkv7_case("f16", f16),
          ], namespace=NS, tol_scale=5,
        notes="IS_DECODE = T == 1 and bool((cu_seqlens.diff() == 1).all()) (data, only with cu_seqlens)"),
    Entry("chunk_rwkv7", "fla.ops.chunk_rwkv7 (-> chunk_dplr_delta_rule)", chunk_rwkv7, rwkv7_ref, [
        _rwkv7_case("f16", f16, T=40),  # fla warns that its chunked DPLR path does not support float32
        _rwkv7_case("f16-noh0-scale", f16, T=40, h0=False, scale=0.5),
        _rwkv7_case("bf16", bf16, T=40),
    ], namespace=NS, tf32=True, tol_scale=30, exact=False,
        cpu_skip="Triton's interpreter cannot run the kernel: it calls tl.gather through a module-level alias "
                 "(fla.ops.utils.op.gather = tl.gather, bound before the interpreter patches triton.language), so the "
                 "builtin runs unpatched (dplr/chunk_A_fwd.py:120: ValueError: Did you forget to add @triton.jit ?); "
                 "CUDA only"),
    Entry("parallel_based", "fla.ops.parallel_based (ParallelBasedFunction.apply)", parallel_based,
          parallel_based_ref, [
              _based_case("f32"),
              _based_case("f32-nonorm", norm=False),
              _based_case("f16", f16),
          ], namespace=NS, tf32=True, tol_scale=10, exact=False,
        notes="q.transpose(1, 2) views into the Function, o / (z[..., None] + 1e-6) and .transpose in ATen after"),
    Entry("parallel_attn", "fla.ops.parallel_attn (ParallelAttentionFunction.apply)", parallel_attn,
          parallel_attn_ref, [
              _attn_case("f32-gqa"),
              _attn_case("f32-forgetting-gates", gate=True),
              _attn_case("f32-window", window=8),
              _attn_case("f16", f16),
              _attn_case("bf16", bf16),
          ], namespace=NS, tf32=True, tol_scale=10, exact=False,
        notes="@contiguous, check_shared_mem('hopper', index) (functools.cache'd device properties) picks block "
              "sizes and num_warps, chunk_global_cumsum for gates, Optional[int] window_size as a constexpr"),
]
