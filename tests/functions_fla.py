"""autograd.Functions of flash-linear-attention (fla-core 0.6.0, module ``fla``) on the framework of
tests/function_corpus.py: each body applies the Function exactly as fla's own public function (or module
forward) does, its argument handling kept; each reference is the same math in plain torch.

What Triton's interpreter (the CPU path) cannot run is said per entry or case (checked on the library's own call
under InterpretLaunches); tests/corpus_fla.py has the forward wrappers of the same kernels.
"""

from dataclasses import replace
from typing import Optional, Tuple

import torch
import triton
import torch.nn.functional as F

from function_corpus import FunctionCase, FunctionEntry, Inputs, bf16, f16, f32

from fla.modules.activations import (
    elu_p1 as fla_elu_p1,
    powglu_linear as fla_powglu_linear,
    sigmoidglu_linear as fla_sigmoidglu_linear,
)
from fla.modules.fused_cross_entropy import cross_entropy_loss as fla_cross_entropy_loss
from fla.modules.grpo import fused_grpo_loss as fla_fused_grpo_loss
from fla.modules.l2warp import l2_warp as fla_l2_warp
from fla.modules.norm.fused_norm_gate import layer_norm_gated as fla_layer_norm_gated
from fla.modules.norm.fused_norm_gate import layer_norm_swish_gate_linear as fla_layer_norm_swish_gate_linear
from fla.modules.norm.layernorm import group_norm as fla_group_norm
from fla.modules.norm.layernorm import layer_norm_linear as fla_layer_norm_linear
from fla.modules.norm.layernorm_gated import layernorm_fn as fla_layernorm_fn
from fla.modules.rotary import rotary_embedding as fla_rotary_embedding
from fla.ops.common.gate import fused_beta_sigmoid as fla_fused_beta_sigmoid
from fla.ops.delta_rule import fused_recurrent_delta_rule as fla_fused_recurrent_delta_rule
from fla.ops.simple_gla import chunk_simple_gla as fla_chunk_simple_gla
from fla.ops.simple_gla import fused_recurrent_simple_gla as fla_fused_recurrent_simple_gla
from fla.ops.utils import mean_pooling as fla_mean_pooling
from fla.ops.utils.sinkhorn import sinkhorn as fla_sinkhorn

import corpus_fla as cf

Tensor = torch.Tensor
LIB = "fla-core"

# fla's own check (fla/ops/common/chunk_o.py, chunk_bwd_dqkwg): it refuses gated chunk backwards on Hopper with
# Triton >= 3.4.0 and < 3.7.1, which computes them wrong there.
_TRITON = tuple(int(v) for v in triton.__version__.split(".")[:3] if v.isdigit())
GATED_CHUNK_BACKWARD_REFUSED = (
    "fla refuses the gated chunk backward (chunk_bwd_dqkwg) on Hopper with Triton >= 3.4.0 and < 3.7.1 "
    f"(Triton {triton.__version__} here)"
    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9 and (3, 4, 0) <= _TRITON < (3, 7, 1)
    else "")
# Its chunked backward's gradients, bit for bit the same through the op and applied directly, are far from the
# recurrence's there (H100, Triton 3.6: dx wrong in 83% of elements), while its forward and the recurrent kernel's
# backward are right: the Triton range fla blames for its gated chunk backwards on Hopper.
CHUNK_HGRN_BACKWARD_WRONG = (
    f"fla's chunk_hgrn backward computes wrong gradients on Hopper with Triton {triton.__version__}"
    if GATED_CHUNK_BACKWARD_REFUSED else "")
RANGE_INDEX_TO = ("Triton's interpreter runs `for i_t in range(NT)` with Python ints, and the kernel calls "
                  "i_t.to(tl.int64) on the loop index (fla/ops/common/chunk_h.py:97: AttributeError: 'int' object "
                  "has no attribute 'to'); CUDA only")


def _case(id, make, dtype=f32, gpu_only="", tol_scale=1.0):
    return FunctionCase(id, make, dtype, gpu_only or cf._no_bf16_on_cpu(dtype), tol_scale)


def _adopt(case, adapt=None, tol_scale=1.0):
    """A case of tests/corpus_fla.py (its seeded inputs, and why the CPU path cannot run it); ``adapt`` maps its
    arguments to the Function's where they differ."""
    make = case.make if adapt is None else lambda device: adapt(case.make(device))
    return FunctionCase(case.id, make, case.dtype, case.gpu_only, tol_scale)


def _without_cu_seqlens(args):
    return args[:-1]


# The bodies, torch references and cases that tests/corpus_fla.py has for the same public functions are that
# corpus's (cf.*); the thin wrappers here take the arguments this corpus's bodies take besides.

# -- shared torch math (besides tests/corpus_fla.py's _ln and _affine) -----------------------------------------


def _linear(y, weight, bias):
    out = y.float() @ weight.float().t()
    return out if bias is None else out + bias.float()


def _with_residual(x, residual):
    return x if residual is None else x.float() + residual.float()


# ================================================================================================
# fla.modules.norm
# ================================================================================================

# -- LayerNormFunction: fla.modules.norm.layernorm.group_norm (GroupNorm.forward; layer_norm/rms_norm are G=1) ------


def group_norm(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], residual: Optional[Tensor] = None,
               eps: float = 1e-5, is_rms_norm: bool = False, num_groups: int = 1) -> Tensor:
    return fla_group_norm(x, weight, bias, residual=residual, eps=eps, is_rms_norm=is_rms_norm,
                          num_groups=num_groups)


def group_norm_ref(x, weight, bias, residual=None, eps=1e-5, is_rms_norm=False, num_groups=1):
    return cf.group_norm_ref(_with_residual(x, residual), weight, bias, num_groups, eps, is_rms_norm).to(x.dtype)


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
    y = cf._affine(cf._ln(_with_residual(x, residual), eps, is_rms_norm), norm_weight, norm_bias).to(x.dtype)
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


def layer_norm_gated(x: Tensor, g: Tensor, weight: Tensor, bias: Optional[Tensor], activation: str = "swish",
                     residual: Optional[Tensor] = None, eps: float = 1e-6) -> Tensor:
    return fla_layer_norm_gated(x, g, weight, bias, activation=activation, residual=residual, eps=eps)


def layer_norm_gated_ref(x, g, weight, bias, activation="swish", residual=None, eps=1e-6):
    return cf.layer_norm_gated_ref(_with_residual(x, residual), g, weight, bias, activation, eps).to(x.dtype)


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
    y = cf.layer_norm_gated_ref(x, g, norm_weight, norm_bias, "swish", eps)
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


def _lngrp_case(id, shape, dtype=f32, *, gate=True, group_size=None, before=True, bias=True, rms=False):
    case = cf._lngrp_case(id, shape, dtype, gate=gate, group_size=group_size, before=before, bias=bias)
    return _adopt(case, lambda args: (*args, rms))  # is_rms_norm


# ================================================================================================
# fla.modules.activations
# ================================================================================================


def elu_p1(x: Tensor) -> Tensor:
    return fla_elu_p1(x)  # ELUPlusOneFunction.apply on CUDA tensors (torch ops on CPU ones)


def sigmoidglu_ref(x, y):
    return (torch.sigmoid(x.float()) * y.float()).to(x.dtype)


def sigmoidglu_linear(x: Tensor, y: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    return fla_sigmoidglu_linear(x, y, weight, bias)  # SigmoidGLULinearFunction.apply


def sigmoidglu_linear_ref(x, y, weight, bias):
    return _linear(sigmoidglu_ref(x, y), weight, bias).to(x.dtype)


def powglu_linear(x: Tensor, y: Tensor, weight: Tensor, bias: Optional[Tensor], power: float = 3.0) -> Tensor:
    return fla_powglu_linear(x, y, weight, bias, power)


def powglu_linear_ref(x, y, weight, bias, power=3.0):
    return _linear(cf.powglu_ref(x, y, power), weight, bias).to(x.dtype)


def _glu_linear_case(id, dtype=f32, *, bias=True, extra=()):
    return _adopt(cf._swiglu_linear_case(id, dtype, bias=bias), lambda args: (*args, *extra))


def beta_sigmoid(x: Tensor, scale: float = 1.0) -> Tensor:
    return fla_fused_beta_sigmoid(x, scale)  # BetaSigmoidFunction.apply


def beta_sigmoid_ref(x, scale=1.0):
    return (scale * torch.sigmoid(x.float())).type_as(x.float())


# ================================================================================================
# fla.modules: causal conv1d, rotary, losses
# ================================================================================================


def causal_conv1d_ref(x, weight, bias=None, residual=None, initial_state=None, activation=None):
    y, final = cf.causal_conv1d_ref(x, weight, bias, residual, initial_state, activation)
    # fla's backward gives the final state's first column (x at T - W, which no later step reads) no gradient
    return y, torch.cat([final[..., :1].detach(), final[..., 1:]], -1)


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False,
                     seqlen_offsets: int = 0) -> Tensor:
    return fla_rotary_embedding(x, cos, sin, interleaved=interleaved, seqlen_offsets=seqlen_offsets)


def _rotary_case(id, dtype=f32, *, interleaved=False, offset=0, R=16):
    return _adopt(cf._rotary_case(id, dtype, T=8, R=R, interleaved=interleaved, offset=offset), _without_cu_seqlens)


def cross_entropy(logits: Tensor, target: Tensor, label_smoothing: float = 0.0, logit_scale: float = 1.0,
                  lse_square_scale: float = 0.0, ignore_index: int = -100) -> Tuple[Tensor, Tensor]:
    loss, z_loss = fla_cross_entropy_loss(logits, target, label_smoothing=label_smoothing, logit_scale=logit_scale,
                                          lse_square_scale=lse_square_scale, ignore_index=ignore_index)
    return loss, z_loss


def cross_entropy_ref(logits, target, label_smoothing=0.0, logit_scale=1.0, lse_square_scale=0.0,
                      ignore_index=-100):
    return cf.cross_entropy_ref(logits, target, label_smoothing, logit_scale, lse_square_scale, None, ignore_index)


def _ce_case(id, dtype=f32, *, smoothing=0.0, scale=1.0, z=0.0):
    # the arguments of tests/corpus_fla.py's case less its logit_softcapping (None), which this body does not take
    return _adopt(cf._ce_case(id, dtype, smoothing=smoothing, scale=scale, z=z), lambda args: (*args[:5], args[6]))


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


def _pool_case(id, dtype=f32, *, B=2, T=20, chunk=8):
    return _case(id, lambda d: (Inputs(d).randn(B, T, 2, 16, dtype=dtype), chunk), dtype)


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
# fla.ops: linear-attention recurrences (tests/corpus_fla.py's references and cases)
# ================================================================================================


def fused_recurrent_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Optional[Tensor] = None,
                               scale: Optional[float] = None, reverse: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_fused_recurrent_simple_gla(q, k, v, g, scale=scale, initial_state=initial_state,
                                           output_final_state=True, reverse=reverse)
    return o, ht


def _simple_gla_case(id, dtype=f32, *, T=12, h0=True, scale=None, reverse=False):
    case = cf._simple_gla_case(id, dtype, T=T, h0=h0, scale=scale, reverse=reverse)
    return _adopt(case, _without_cu_seqlens, tol_scale=5)


def chunk_simple_gla(q: Tensor, k: Tensor, v: Tensor, g: Tensor, initial_state: Optional[Tensor] = None,
                     scale: Optional[float] = None, reverse: bool = False) -> Tuple[Tensor, Tensor]:
    assert not reverse  # the chunked kernel has no reverse mode: the recurrent entry's arguments
    o, ht = fla_chunk_simple_gla(q, k, v, g, scale=scale, initial_state=initial_state, output_final_state=True)
    return o, ht


def _parallel_case(id, dtype=f32, *, gate=True, scale=None):
    return _adopt(cf._parallel_case(id, dtype, B=1, T=16, gate=gate, scale=scale), tol_scale=10)


def _hgrn_case(id, dtype=f32, *, T=20, h0=True):
    return _adopt(cf._hgrn_case(id, dtype, T=T, D=24, h0=h0), tol_scale=5)


def _based_case(id, dtype=f32, *, norm=True):
    return _adopt(cf._based_case(id, dtype, B=1, T=16, norm=norm), tol_scale=10)


def fused_recurrent_delta_rule(q: Tensor, k: Tensor, v: Tensor, beta: Tensor, initial_state: Optional[Tensor] = None,
                               scale: Optional[float] = None,
                               use_qk_l2norm_in_kernel: bool = False) -> Tuple[Tensor, Tensor]:
    o, ht = fla_fused_recurrent_delta_rule(q, k, v, beta, scale=scale, initial_state=initial_state,
                                           output_final_state=True, use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel)
    return o, ht


def _delta_case(id, dtype=f32, *, h0=True, scale=None, l2=False):
    return _adopt(cf._delta_case(id, dtype, T=10, h0=h0, scale=scale, l2=l2), _without_cu_seqlens, tol_scale=5)


def rwkv6_ref(r, k, v, w, u, initial_state=None, scale=None, reverse=False):
    o, ht = cf.rwkv6_ref(r, k, v, w, u, initial_state, scale, reverse)
    return o, ht.detach()  # FusedRecurrentRWKV6Function.backward ignores dht (the final state's gradient)


def _rwkv6_case(id, dtype=f32, *, h0=True, scale=None, reverse=False):
    return _adopt(cf._rwkv6_case(id, dtype, T=10, h0=h0, scale=scale, reverse=reverse), tol_scale=5)


# ================================================================================================
# The entries
# ================================================================================================


def _entry(name, function, body, reference, cases, grads, **kw):
    return FunctionEntry(f"fla_{name}", LIB, function, body, reference, cases, grads, **kw)


ENTRIES = [
    # -- norms -------------------------------------------------------------------------------------------------
    _entry("l2norm", "fla.modules.norm.l2norm.L2NormFunction", cf.l2norm, cf.l2norm_ref, [
        _adopt(cf._l2_case("f32", (2, 5, 32))),
        _adopt(cf._l2_case("f16-out-f32", (6, 64), f16, out=f32)),
        _adopt(cf._l2_case("f32-row-kernel", (2, 600))),
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
    _entry("layernorm_gated", "fla.modules.norm.layernorm_gated.LayerNormFn", layernorm_gated, cf._grouped_gated_ref, [
        _lngrp_case("f32-gate-after-norm", (2, 5, 32)),
        _lngrp_case("f32-rms-gate-before-groups", (6, 48), group_size=16, before=False, rms=True),
        _lngrp_case("f16-groups", (4, 64), f16, group_size=32),
    ], grads=(0, 1, 2, 3)),
    # -- activations -------------------------------------------------------------------------------------------
    _entry("sigmoid", "fla.modules.activations.ops.SigmoidFunction", cf.sigmoid,
           lambda x: torch.sigmoid(x.float()).to(x.dtype), [
               _adopt(cf._act_case("f32", (2, 5, 32))),
               _adopt(cf._act_case("f16", (7, 50), f16)),
           ], grads=(0,)),
    _entry("logsigmoid", "fla.modules.activations.ops.LogSigmoidFunction", cf.logsigmoid,
           cf.logsigmoid_ref, [
               _adopt(cf._act_case("f32", (2, 5, 32), extra=(1.0,))),
               _adopt(cf._act_case("f16-temperature", (7, 50), f16, extra=(2.0,))),
           ], grads=(0,)),
    _entry("swish", "fla.modules.activations.ops.SwishFunction", cf.swish, lambda x: F.silu(x.float()).to(x.dtype), [
        _adopt(cf._act_case("f32", (2, 5, 32))),
        _adopt(cf._act_case("f16", (7, 50), f16)),
    ], grads=(0,)),
    _entry("elu_p1", "fla.modules.activations.ops.ELUPlusOneFunction", elu_p1,
           lambda x: (F.elu(x.float()) + 1).to(x.dtype), [
               _adopt(cf._act_case("f32", (2, 5, 32))),
               _adopt(cf._act_case("f16", (7, 50), f16)),
           ], grads=(0,),
           gpu_only="fla's elu_p1 applies the Function only to CUDA tensors (on CPU it computes in torch), and "
                    "Triton's interpreter does not implement libdevice.exp (both kernels call it: the call returns "
                    "None there); CUDA only"),
    _entry("swiglu", "fla.modules.activations.ops.SwiGLUFunction", cf.swiglu, cf.swiglu_ref, [
        _adopt(cf._act_case("f32", (2, 5, 32), n=2)),
        _adopt(cf._act_case("f16", (7, 50), f16, n=2)),
        _adopt(cf._act_case("bf16", (4, 64), bf16, n=2)),
    ], grads=(0, 1)),
    _entry("sigmoidglu", "fla.modules.activations.ops.SigmoidGLUFunction", cf.sigmoidglu, sigmoidglu_ref, [
        _adopt(cf._act_case("f32", (2, 5, 32), n=2)),
        _adopt(cf._act_case("f16", (7, 50), f16, n=2)),
    ], grads=(0, 1)),
    _entry("powglu", "fla.modules.activations.ops.PowGLUFunction", cf.powglu, cf.powglu_ref, [
        _adopt(cf._act_case("f32", (2, 5, 32), n=2, extra=(3.0,))),
        _adopt(cf._act_case("f16-power2", (7, 50), f16, n=2, extra=(2.0,))),
    ], grads=(0, 1)),
    _entry("swiglu_linear", "fla.modules.activations.ops.SwiGLULinearFunction", cf.swiglu_linear,
           cf.swiglu_linear_ref, [
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
        _adopt(cf._act_case("f32", (2, 12, 4), extra=(1.0,))),
        _adopt(cf._act_case("f16-scale2", (2, 12, 4), f16, extra=(2.0,))),
    ], grads=(0,)),
    # -- token shift, conv, rotary -------------------------------------------------------------------------------
    _entry("token_shift", "fla.modules.token_shift.TokenShift", cf.token_shift, cf.token_shift_ref, [
        _adopt(cf._token_shift_case("f32", (2, 8, 32))),
        _adopt(cf._token_shift_case("f32-cache", (2, 8, 32), cache=True)),
        _adopt(cf._token_shift_case("f16", (3, 5, 48), f16)),
    ], grads=(0,)),
    _entry("causal_conv1d", "fla.modules.causal_conv1d.ops.CausalConv1dFunction", cf.causal_conv1d, causal_conv1d_ref, [
        _adopt(cf._conv_case("f32-swish")),
        _adopt(cf._conv_case("f32-state-residual", state=True, residual=True, act=None)),
        _adopt(cf._conv_case("f16", f16)),
    ], grads=(0, 1, 2), tol_scale=3),
    _entry("rotary_embedding", "fla.modules.rotary.ops.RotaryEmbeddingFunction", rotary_embedding,
           cf.rotary_embedding_ref, [
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
           cf.fused_linear_cross_entropy, cf.fused_linear_cross_entropy_ref, [
               _adopt(cf._flce_case("f32-mean")),
               _adopt(cf._flce_case("f32-sum-smoothing-2chunks", reduction="sum", smoothing=0.1, chunks=2)),
           ], grads=(0, 2, 3), tol_scale=20),
    _entry("kl_div", "fla.modules.fused_kl_div.ops.FusedKLDivLossFunction", cf.kl_div, cf.kl_div_ref, [
        _adopt(cf._kl_case("f32")),
        _adopt(cf._kl_case("f16", f16)),
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
    _entry("mean_pooling", "fla.ops.utils.pooling.MeanPoolingFunction", mean_pooling, cf.mean_pooling_ref, [
        _pool_case("f32"),
        _pool_case("f16", f16, T=16),
    ], grads=(0,)),
    _entry("pack_sequence", "fla.ops.utils.pack.PackSequenceFunction", cf.pack_sequence, cf.pack_sequence_ref, [
        _adopt(cf._pack_case("f32-left")),
        _adopt(cf._pack_case("f32-right", side="right")),
    ], grads=(0,), python_backward_off_cuda="the Function's output sizes are read from cu_seqlens (Read steps): "
                                            "the C++ node keeps them, the Python path cannot recompute them"),
    _entry("unpack_sequence", "fla.ops.utils.pack.UnpackSequenceFunction", cf.unpack_sequence, cf.unpack_sequence_ref, [
        _adopt(cf._unpack_case("f32-left")),
        _adopt(cf._unpack_case("f32-right", side="right")),
    ], grads=(0,)),
    _entry("sinkhorn", "fla.ops.utils.sinkhorn.ops.SinkhornFunction", sinkhorn, sinkhorn_ref, [
        _sinkhorn_case("f32-4x4"),
        _sinkhorn_case("f32-3x3-5iters", N=3, iters=5),
    ], grads=(0,), tol_scale=10,
        gpu_only="fla's sinkhorn raises ValueError('Sinkhorn kernels require NVIDIA CUDA tensors') for CPU tensors; "
                 "CUDA only"),
    # -- fla.ops: attention recurrences ---------------------------------------------------------------------------
    _entry("fused_recurrent_simple_gla", "fla.ops.common.fused_recurrent.FusedRecurrentFunction",
           fused_recurrent_simple_gla, cf._simple_gla_ref, [
               _simple_gla_case("f32"),
               _simple_gla_case("f32-reverse-scale", h0=False, scale=0.5, reverse=True),
           ], grads=(0, 1, 2, 3)),
    _entry("chunk_simple_gla", "fla.ops.simple_gla.chunk.ChunkSimpleGLAFunction", chunk_simple_gla,
           cf._simple_gla_ref, [
               _simple_gla_case("f32", T=40),
               _simple_gla_case("bf16", bf16, T=40),
           ], grads=(0, 1, 2, 3, 4), tol_scale=4, gpu_only=RANGE_INDEX_TO, tf32=True,
           refused_on_this_gpu=GATED_CHUNK_BACKWARD_REFUSED),
    _entry("parallel_simple_gla", "fla.ops.simple_gla.parallel.ParallelSimpleGLAFunction", cf.parallel_simple_gla,
           cf.parallel_simple_gla_ref, [
               _parallel_case("f32"),
               _parallel_case("f32-nogate-scale", gate=False, scale=0.3),
           ], grads=(0, 1, 2), tf32=True),
    _entry("fused_recurrent_hgrn", "fla.ops.hgrn.fused_recurrent.FusedRecurrentHGRNFunction", cf.fused_recurrent_hgrn,
           cf.chunk_hgrn_ref, [
               _hgrn_case("f32"),
               _hgrn_case("f32-noh0", h0=False),
           ], grads=(0, 1)),
    _entry("chunk_hgrn", "fla.ops.hgrn.chunk.ChunkHGRNFunction", cf.chunk_hgrn, cf.chunk_hgrn_ref, [
        _hgrn_case("f32", T=40),
        _hgrn_case("f32-noh0", T=40, h0=False),
    ], grads=(0, 1),
        gpu_only="Triton's interpreter runs the backward's `for i_t in range(...)` with Python ints, and "
                 "chunk_hgrn_bwd_kernel_o calls (i_t * BT).to(tl.int64) on the loop index (fla/ops/hgrn/chunk.py:202: "
                 "AttributeError: 'int' object has no attribute 'to'); CUDA only",
        wrong_on_this_gpu=CHUNK_HGRN_BACKWARD_WRONG),
    _entry("parallel_based", "fla.ops.based.parallel.ParallelBasedFunction", cf.parallel_based, cf.parallel_based_ref, [
        replace(_based_case("f32"), python_backward="parallel_based divides the Function's output by its "
                                                    "normalizer (o / (z + eps)): arithmetic on the gradient's path"),
        _based_case("f32-nonorm", norm=False),
    ], grads=(0, 1, 2), tf32=True),
    _entry("fused_recurrent_delta_rule", "fla.ops.delta_rule.fused_recurrent.FusedRecurrentFunction",
           fused_recurrent_delta_rule, cf.fused_recurrent_delta_rule_ref, [
               _delta_case("f32"),
               _delta_case("f32-l2norm-in-kernel", l2=True, scale=0.5),
           ], grads=(0, 1, 2, 3, 4)),
    _entry("fused_recurrent_rwkv6", "fla.ops.rwkv6.fused_recurrent.FusedRecurrentRWKV6Function",
           cf.fused_recurrent_rwkv6, rwkv6_ref, [
               _rwkv6_case("f32"),
               # no reverse=True case: there the library's own dw (fused_recurrent_rwkv6_bwd_kernel_dw, whose q
               # offset is o_q = i_t * BT + 1 + o_i in both directions) differs from the reversed recurrence's
               _rwkv6_case("f32-noh0-scale", h0=False, scale=0.5),
           ], grads=(0, 1, 2, 3, 4), tf32=True),
]
