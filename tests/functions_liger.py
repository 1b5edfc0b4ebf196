"""autograd.Functions of Liger-Kernel (0.8.5), applied as Liger's own functional API and modules apply them
(liger_kernel/transformers/functional.py, transformers/*.py, megatron/swiglu.py), on the framework of
tests/function_corpus.py.

Why Triton's interpreter (the CPU path) cannot run some of them was checked by applying the library's own
Function under ``InterpretLaunches`` (the runner's CPU path for the library): those are the interpreter's limits,
not torch_tile's (tests/liger_corpus.py found the same with TRITON_INTERPRET=1).

The rotary embeddings (rope, qwen2vl_mrope) take q/k as contiguous (bsz, heads, seq, head_dim): their forwards then
rotate copies (q.transpose(1, 2).contiguous()), a functional op. In HF's layout (a transposed view of a contiguous
(bsz, seq, heads, head_dim)) they rotate q/k in place and return views of them, as llama4_rope always does."""

from dataclasses import replace
from typing import Optional

import torch
import torch.nn.functional as F

from function_corpus import FunctionCase, FunctionEntry, Inputs, bf16, f16, f32

from liger_kernel.ops.attn_res import LigerAttnResFunction
from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
from liger_kernel.ops.dyt import LigerDyTFunction
from liger_kernel.ops.experimental.embedding import LigerEmbeddingFunction
from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
from liger_kernel.ops.fused_ce_tvd import LigerFusedCETVDFunction
from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction
from liger_kernel.ops.fused_linear_jsd import LigerFusedLinearJSDFunction
from liger_kernel.ops.fused_linear_kl_div import LigerFusedLinearKLDivFunction
from liger_kernel.ops.fused_neighborhood_attention import LigerFusedNeighborhoodAttentionFunction
from liger_kernel.ops.geglu import LigerGELUMulFunction
from liger_kernel.ops.group_norm import LigerGroupNormFunction
from liger_kernel.ops.grpo_loss import GrpoLossFunction
from liger_kernel.ops.jsd import LigerJSDFunction
from liger_kernel.ops.kl_div import LigerKLDivLossFunction
from liger_kernel.ops.layer_norm import LigerLayerNormFunction
from liger_kernel.ops.llama4_rope import LigerLlama4RopeFunction
from liger_kernel.ops.mhc import LigerMHCCoeffsFunction, LigerMHCPostResFunction, LigerMHCPreFunction
from liger_kernel.ops.mlp import LigerMLPFunction
from liger_kernel.ops.modulated_rms_norm import LigerModulatedRMSNormFunction
from liger_kernel.ops.multi_token_attention import LigerMultiTokenAttentionFunction
from liger_kernel.ops.poly_norm import LigerPolyNormFunction
from liger_kernel.ops.qwen2vl_mrope import LigerQwen2VLMRopeFunction
from liger_kernel.ops.relu_squared import LigerReLUSquaredFunction
from liger_kernel.ops.rms_norm import LigerRMSNormFunction
from liger_kernel.ops.rope import LigerRopeFunction
from liger_kernel.ops.softmax import LigerSoftmaxFunction
from liger_kernel.ops.sparsemax import LigerSparsemaxFunction
from liger_kernel.ops.swiglu import LigerFusedGateUpSiLUMulFunction, LigerSiLUMulFunction
from liger_kernel.ops.tvd import LigerTVDLossFunction

import liger_corpus as lc
from liger_corpus import FLOAT_ARG_TO, LIBDEVICE

Tensor = torch.Tensor
LIB = "liger-kernel"

# Why Triton's interpreter (3.8, the CPU path) cannot run a Function (its own call fails there): FLOAT_ARG_TO,
# LIBDEVICE (tests/liger_corpus.py, which found the same for the forward wrappers).


def _case(id, make, dtype=f32, gpu_only="", tol_scale=1.0):
    return FunctionCase(id, make, dtype, gpu_only or lc._no_bf16_on_cpu(dtype), tol_scale)


def _adopt(case, *extra):
    """A case of tests/liger_corpus.py (its seeded inputs, and why the CPU path cannot run it), with ``extra``
    arguments after its own: those the Function takes and the forward wrapper does not."""
    return FunctionCase(case.id, lambda device: case.make(device) + extra, case.dtype, case.gpu_only)


# Kernels that accumulate a gradient with tl.atomic_add: the order, and so the rounding, differs between runs on CUDA.
ATOMIC_ADD = "its backward accumulates {} with tl.atomic_add"


def _fn(name):
    return f"liger_kernel.ops.{name}"


# The torch references and the cases of the Functions whose forward wrappers tests/liger_corpus.py calls are that
# corpus's (lc.*_ref, lc._*_case); the thin wrappers here take the arguments the Function takes besides.

# -- rms_norm (functional.liger_rms_norm) -------------------------------------------------------------------------


def rms_norm(X: Tensor, W: Optional[Tensor], eps: float, offset: float, casting_mode: str, in_place: bool) -> Tensor:
    return LigerRMSNormFunction.apply(X, W, eps, offset, casting_mode, in_place)


def rms_norm_ref(X, W, eps, offset, casting_mode, in_place):
    return lc.rms_norm_ref(X, W, eps, offset)


def _rms_case(id, shape, dtype=f32, *, offset=0.0, mode="llama", in_place=True):
    return _adopt(lc._rms_case(id, shape, dtype, offset=offset, mode=mode), in_place)


# -- fused_add_rms_norm (functional.liger_fused_add_rms_norm) ------------------------------------------------------


def fused_add_rms_norm(X: Tensor, R: Tensor, W: Tensor, eps: float, offset: float, casting_mode: str,
                       in_place: bool) -> tuple[Tensor, Tensor]:
    return LigerFusedAddRMSNormFunction.apply(X, R, W, eps, offset, casting_mode, in_place)


def fused_add_rms_norm_ref(X, R, W, eps, offset, casting_mode, in_place):
    return lc.fused_add_rms_norm_ref(X, R, W, eps, offset)


def _fused_add_case(id, shape, dtype=f32, *, offset=0.0, mode="llama"):
    return _adopt(lc._fused_add_case(id, shape, dtype, offset=offset, mode=mode), True)


# -- modulated_rms_norm (functional.liger_modulated_rms_norm) -----------------------------------------------------


def modulated_rms_norm(X: Tensor, W: Tensor, scale: Tensor, shift: Tensor, eps: float, offset: float,
                       casting_mode: str, in_place: bool) -> Tensor:
    return LigerModulatedRMSNormFunction.apply(X, W, scale, shift, eps, offset, casting_mode, in_place)


def modulated_rms_norm_ref(X, W, scale, shift, eps, offset, casting_mode, in_place):
    return lc.modulated_rms_norm_ref(X, W, scale, shift, eps, offset)


def _modulated_case(id, dtype=f32):
    return _adopt(lc._modulated_case(id, dtype), 0.0, "llama", True)  # offset, casting_mode, in_place


# -- poly_norm (functional.liger_poly_norm) ------------------------------------------------------------------------


def poly_norm(X: Tensor, W: Tensor, B: Tensor, eps: float, in_place: bool) -> Tensor:
    return LigerPolyNormFunction.apply(X, W, B, eps, in_place)


def poly_norm_ref(X, W, B, eps, in_place):
    return lc.poly_norm_ref(X, W, B, eps)


def _poly_case(id, dtype=f32):
    """The forward corpus's inputs with the bias 0-d, as LigerPolyNorm's parameter is (torch.tensor(1.0)): the
    Function's backward returns a 0-d gradient for it, which autograd refuses for a bias of shape (1,)."""
    case = lc._poly_case(id, dtype)

    def make(device):
        X, W, B, eps = case.make(device)
        return (X, W, B.reshape(()), eps, True)  # in_place
    return FunctionCase(case.id, make, case.dtype, case.gpu_only)


# -- layer_norm / group_norm ---------------------------------------------------------------------------------------


def layer_norm(X: Tensor, W: Tensor, B: Tensor, eps: float) -> Tensor:
    return LigerLayerNormFunction.apply(X, W, B, eps)


def group_norm(X: Tensor, affine_scaling_weight: Tensor, affine_shifting_bias: Tensor, num_channels: int,
               num_groups: int, eps: float) -> Tensor:
    return LigerGroupNormFunction.apply(X, affine_scaling_weight, affine_shifting_bias, num_channels, num_groups, eps)


# -- swiglu (transformers/swiglu.py _swiglu_dispatch) / geglu / relu_squared / fused gate-up (megatron) -------------


def swiglu(a: Tensor, b: Tensor, gate_multiplier: float, down_multiplier: float) -> Tensor:
    return LigerSiLUMulFunction.apply(a, b, float(gate_multiplier), float(down_multiplier))


def swiglu_ref(a, b, gate_multiplier, down_multiplier):
    # the Function rounds silu(a) * b to a's dtype before it scales it by down_multiplier
    return (lc.swiglu_ref(a, b, gate_multiplier).float() * down_multiplier).to(a.dtype)


def geglu(a: Tensor, b: Tensor) -> Tensor:
    return LigerGELUMulFunction.apply(a, b)


def relu_squared(x: Tensor) -> Tensor:
    return LigerReLUSquaredFunction.apply(x)


def fused_gate_up_swiglu(input: Tensor, in_place: bool) -> Tensor:
    # liger_kernel.megatron.swiglu.LigerMegatronSwiGLU.forward (the fused [tokens, 2 * ffn] layout)
    ori_shape = input.shape
    if len(ori_shape) not in (2, 3):
        raise ValueError(f"expects a 2D or 3D input; got shape {tuple(ori_shape)}.")
    if ori_shape[-1] % 2 != 0:
        raise ValueError(f"the last dimension must be even; got {ori_shape[-1]}.")
    output = LigerFusedGateUpSiLUMulFunction.apply(input.view(-1, ori_shape[-1]), in_place)
    return output if len(ori_shape) == 2 else output.view(ori_shape[0], ori_shape[1], -1)


def fused_gate_up_swiglu_ref(input, in_place):
    return lc.swiglu_fused_gate_up_ref(input)


def _gate_up_case(id, shape, dtype=f32, in_place=False):
    return _adopt(lc._fused_gate_up_case(id, shape, dtype), in_place)


# -- dyt (transformers/dyt.py) ---------------------------------------------------------------------------------------


def dyt(x: Tensor, alpha: Tensor, gamma: Tensor, beta: Tensor) -> Tensor:
    return LigerDyTFunction.apply(x, alpha, gamma, beta)


# -- softmax / sparsemax ---------------------------------------------------------------------------------------------


def softmax(x: Tensor) -> Tensor:
    return LigerSoftmaxFunction.apply(x)


def sparsemax(input: Tensor, dim: int) -> Tensor:
    return LigerSparsemaxFunction.apply(input, dim)


# -- cross_entropy (functional.liger_cross_entropy; the kernel writes the logits' gradient into the logits) ---------


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor], ignore_index: int,
                  lse_square_scale: float, label_smoothing: float, reduction: str, softcap: Optional[float]) -> Tensor:
    loss, z_loss, token_accuracy, predicted_tokens = LigerCrossEntropyFunction.apply(
        input, target, weight, ignore_index, lse_square_scale, label_smoothing, reduction, softcap, False, False, False,
    )
    return loss


# -- fused_linear_cross_entropy (functional.liger_fused_linear_cross_entropy) --------------------------------------


def fused_linear_cross_entropy(input: Tensor, weight: Tensor, target: Tensor, bias: Optional[Tensor],
                               ce_weight: Optional[Tensor], ignore_index: int, lse_square_scale: float,
                               label_smoothing: float, reduction: str, softcap: Optional[float]) -> Tensor:
    apply_args = (input, weight, target, bias, ce_weight, ignore_index, lse_square_scale, label_smoothing, reduction,
                  softcap, False, None, False, False, False)
    if getattr(LigerFusedLinearCrossEntropyFunction, "supports_inner_impl_dispatch", False):
        apply_args += (None, None, 1)
    loss, z_loss, token_accuracy, predicted_tokens = LigerFusedLinearCrossEntropyFunction.apply(*apply_args)
    return loss


def fused_linear_cross_entropy_ref(input, weight, target, bias, ce_weight, ignore_index, lse_square_scale,
                                   label_smoothing, reduction, softcap):
    return lc.fused_linear_cross_entropy_ref(input, weight, target, bias, ce_weight, ignore_index, lse_square_scale,
                                             label_smoothing, reduction, softcap).to(input.dtype)


def _flce_case(id, dtype=f32, *, reduction="mean", smoothing=0.0):
    inputs = lc._flce_case(id, dtype).make  # input, weight, target, bias, ce_weight, ignore_index, lse_square_scale
    return _case(id, lambda device: (*inputs(device)[:7], smoothing, reduction, None), dtype)


# -- kl_div / jsd / tvd ----------------------------------------------------------------------------------------------


def kl_div(input: Tensor, target: Tensor, reduction: str, log_target: bool, eps: float) -> Tensor:
    return LigerKLDivLossFunction.apply(input, target, reduction, log_target, eps)  # functional.liger_kl_div


def _kl_case(id, dtype=f32, *, reduction="batchmean", log_target=False):
    return _adopt(lc._kl_case(id, dtype, reduction=reduction, log_target=log_target), 1e-10)  # eps


def jsd(input: Tensor, target: Tensor, shift_labels: Optional[Tensor], beta: float, ignore_index: int) -> Tensor:
    return LigerJSDFunction.apply(input, target, shift_labels, beta, ignore_index, None, None)  # liger_jsd


def tvd(input: Tensor, target: Tensor, shift_labels: Optional[Tensor], reduction: str, ignore_index: int) -> Tensor:
    return LigerTVDLossFunction.apply(input, target, shift_labels, reduction, ignore_index)  # liger_tvd


# -- fused_linear_jsd / fused_linear_kl_div (gradients computed in the forward) ---------------------------------------


def fused_linear_jsd(student_input: Tensor, student_weight: Tensor, teacher_input: Tensor, teacher_weight: Tensor,
                     shift_labels: Optional[Tensor], jsd_beta: float, ignore_index: int, temperature: float) -> Tensor:
    return LigerFusedLinearJSDFunction.apply(student_input, student_weight, teacher_input, teacher_weight, shift_labels,
                                             jsd_beta, ignore_index, temperature, None, None, None)


def fused_linear_jsd_ref(student_input, student_weight, teacher_input, teacher_weight, shift_labels, jsd_beta,
                         ignore_index, temperature):
    s = torch.log_softmax(student_input.float() @ student_weight.float().t() / temperature, -1)
    t = torch.log_softmax(teacher_input.float() @ teacher_weight.float().t() / temperature, -1)
    return lc.jsd_ref(s, t, shift_labels, jsd_beta, ignore_index).to(student_input.dtype)


def _fljsd_case(id, dtype=f32, *, beta=0.5, labels=False, temperature=1.0):
    def make(device):
        r = Inputs(device)
        BT, H, V = 8, 32, 64
        shift = None
        if labels:
            shift = r.randint(0, V, (BT,))
            shift[3] = -100
        return (r.randn(BT, H, dtype=dtype), r.randn(V, H, dtype=dtype, scale=0.2), r.randn(BT, H, dtype=dtype),
                r.randn(V, H, dtype=dtype, scale=0.2), shift, beta, -100, temperature)
    return _case(id, make, dtype)


def fused_linear_kl_div(student_input: Tensor, student_weight: Tensor, target: Tensor, shift_labels: Optional[Tensor],
                        reduction: str, ignore_index: int, temperature: float, eps: float) -> Tensor:
    return LigerFusedLinearKLDivFunction.apply(student_input, student_weight, target, shift_labels, reduction,
                                               ignore_index, temperature, eps, None)  # liger_fused_linear_kl_div


def fused_linear_kl_div_ref(student_input, student_weight, target, shift_labels, reduction, ignore_index, temperature,
                            eps):
    logq = torch.log_softmax(student_input.float() @ student_weight.float().t() / temperature, -1)
    t = target.float()
    rows_loss = (t * (torch.log(torch.clamp(t, min=eps)) - logq)).sum(-1)
    rows = torch.ones(t.shape[0], dtype=torch.bool, device=t.device)
    if shift_labels is not None:
        rows = shift_labels != ignore_index
    n = int(rows.sum())
    total = (rows_loss * rows).sum()
    return {"sum": total, "batchmean": total / n, "mean": total / (n * t.shape[1])}[reduction]


def _flkl_case(id, dtype=f32, *, reduction="batchmean", labels=False, temperature=1.0):
    def make(device):
        r = Inputs(device)
        BT, H, V = 8, 32, 64
        target = torch.softmax(r.randn(BT, V), -1).to(dtype)
        shift = None
        if labels:
            shift = r.randint(0, V, (BT,))
            shift[5] = -100
        return (r.randn(BT, H, dtype=dtype), r.randn(V, H, dtype=dtype, scale=0.2), target, shift, reduction, -100,
                temperature, 1e-10)
    return _case(id, make, dtype)


# -- fused_ce_tvd (transformers/fused_ce_tvd.py) ---------------------------------------------------------------------


def fused_ce_tvd(student_logits: Tensor, teacher_logits: Tensor, target: Tensor,
                 ignore_index: int) -> tuple[Tensor, Tensor]:
    return LigerFusedCETVDFunction.apply(student_logits, teacher_logits, target, ignore_index)


def fused_ce_tvd_ref(student_logits, teacher_logits, target, ignore_index):
    s = student_logits.float()
    t = teacher_logits.float().detach()  # the teacher is a constant (its backward returns no gradient)
    keep = target != ignore_index
    ce = F.cross_entropy(s, target, ignore_index=ignore_index, reduction="none")
    tv = 0.5 * (torch.softmax(s, -1) - torch.softmax(t, -1)).abs().sum(-1)
    return ce * keep, tv * keep


def _cetvd_case(id, dtype=f32, *, BT=8, V=100):
    def make(device):
        r = Inputs(device)
        target = r.randint(0, V, (BT,))
        target[2] = -100
        return (r.randn(BT, V, dtype=dtype), r.randn(BT, V, dtype=dtype), target, -100)
    return _case(id, make, dtype)


# -- rope / qwen2vl_mrope / llama4_rope --------------------------------------------------------------------------------


def rope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, position_ids: Optional[Tensor], unsqueeze_dim: int,
         rotary_dim: Optional[int]) -> tuple[Tensor, Tensor]:
    return LigerRopeFunction.apply(q, k, cos, sin, position_ids, unsqueeze_dim, rotary_dim)  # functional.liger_rope


def _rope_case(id, dtype=f32, *, cos_batch=1, rd=16):
    # q/k as (bsz, heads, seq, head_dim), contiguous: rope_forward rotates copies of them (q.transpose(1, 2)
    # .contiguous()), so the Function is functional.
    return _adopt(lc._rope_case(id, dtype, hf_layout=False, cos_batch=cos_batch, rd=rd), None, 1, None)


def qwen2vl_mrope(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, mrope_section: list[int],
                  unsqueeze_dim: int) -> tuple[Tensor, Tensor]:
    return LigerQwen2VLMRopeFunction.apply(q, k, cos, sin, mrope_section, unsqueeze_dim)  # liger_qwen2vl_mrope


def _mrope_case(id, dtype=f32):
    def make(device):
        r = Inputs(device)
        bsz, seq, nq, nk, hd = 2, 5, 4, 2, 16
        q, k = r.randn(bsz, nq, seq, hd, dtype=dtype), r.randn(bsz, nk, seq, hd, dtype=dtype)
        cos, sin = lc._cos_sin(r, bsz, seq, hd, dtype)  # three position grids (t, h, w): shifted copies
        cos = torch.stack([cos, cos.roll(1, 1), cos.roll(2, 1)]).contiguous()
        sin = torch.stack([sin, sin.roll(1, 1), sin.roll(2, 1)]).contiguous()
        return (q, k, cos, sin, [2, 3, 3], 1)
    return _case(id, make, dtype)


def llama4_rope(xq: Tensor, xk: Tensor, freqs_cis: Tensor) -> tuple[Tensor, Tensor]:
    return LigerLlama4RopeFunction.apply(xq, xk, freqs_cis)  # transformers/llama4_rope.py


# -- embedding (transformers/experimental/embedding.py) -------------------------------------------------------------


def embedding(weight: Tensor, indices: Tensor) -> Tensor:
    return LigerEmbeddingFunction.apply(weight, indices)


# -- multi_token_attention / fused_neighborhood_attention / attn_res ---------------------------------------------------


def multi_token_attention(scores: Tensor, weight: Tensor, bias: Optional[Tensor], stride: int, padding: int,
                          dilation: int, groups: int, sparse: bool) -> Tensor:
    return LigerMultiTokenAttentionFunction.apply(scores, weight, bias, stride, padding, dilation, groups, sparse)


def neighborhood_attention(query: Tensor, key: Tensor, value: Tensor, kernel_size: int, dilation: int,
                           scale: Optional[float]) -> Tensor:
    return LigerFusedNeighborhoodAttentionFunction.apply(query, key, value, kernel_size, dilation, scale)


def _na_case(id, dtype=f32, *, dilation=1, scale=None):
    return _adopt(lc._na_case(id, dtype, dilation=dilation), scale)


def attn_res(V: Tensor, w_query: Tensor, w_norm: Tensor, eps: float) -> Tensor:
    return LigerAttnResFunction.apply(V, w_query, w_norm, eps)  # functional.liger_attn_res


# -- mHC (functional.liger_mhc_coeffs / liger_mhc_pre / liger_mhc_post_res) -------------------------------------------


def mhc_coeffs(x: Tensor, phi: Tensor, b: Tensor, alpha_pre: Tensor, alpha_post: Tensor, alpha_res: Tensor,
               allow_fp32: bool, tmax: int, rms_eps: float, pre_eps: float, sinkhorn_eps: float,
               post_mult: float) -> tuple[Tensor, Tensor, Tensor]:
    return LigerMHCCoeffsFunction.apply(x, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32, int(tmax),
                                        float(rms_eps), float(pre_eps), float(sinkhorn_eps), float(post_mult))


def mhc_coeffs_ref(x, phi, b, alpha_pre, alpha_post, alpha_res, allow_fp32, tmax, rms_eps, pre_eps, sinkhorn_eps,
                   post_mult):
    HC, C = x.shape[-2], x.shape[-1]
    outer = x.shape[:-2]
    xm = x.float().reshape(-1, HC * C)
    mix = (xm @ phi.float()) * torch.rsqrt(xm.pow(2).mean(-1, keepdim=True) + rms_eps)
    bf = b.float()
    pre = torch.sigmoid(mix[:, :HC] * alpha_pre.float() + bf[:HC]) + pre_eps
    post = torch.sigmoid(mix[:, HC:2 * HC] * alpha_post.float() + bf[HC:2 * HC]) * post_mult
    logits = mix[:, 2 * HC:].reshape(-1, HC, HC) * alpha_res.float() + bf[2 * HC:].reshape(HC, HC)
    mat = torch.softmax(logits, -1) + sinkhorn_eps
    mat = mat / (mat.sum(-2, keepdim=True) + sinkhorn_eps)
    for _ in range(tmax - 1):
        mat = mat / (mat.sum(-1, keepdim=True) + sinkhorn_eps)
        mat = mat / (mat.sum(-2, keepdim=True) + sinkhorn_eps)
    return pre.reshape(*outer, HC), post.reshape(*outer, HC), mat.reshape(*outer, HC, HC)


def _mhc_coeffs_case(id, dtype=f32, *, tmax=4):
    def make(device):
        r = Inputs(device)
        HC, C = 4, 16
        M = HC * HC + 2 * HC
        scalar = lambda v: torch.tensor(v, dtype=torch.float32, device=device)  # noqa: E731
        return (r.randn(2, 3, HC, C, dtype=dtype), r.randn(HC * C, M, dtype=dtype, scale=0.1),
                r.randn(M, scale=0.1), scalar(0.8), scalar(1.1), scalar(0.9), dtype == f32, tmax, 1e-6, 0.0, 1e-6,
                2.0)
    return _case(id, make, dtype)


def mhc_pre(x: Tensor, h_pre: Tensor) -> Tensor:
    return LigerMHCPreFunction.apply(x, h_pre)


def _mhc_pre_case(id, dtype=f32):
    def make(device):
        r = Inputs(device)
        return (r.randn(2, 5, 4, 48, dtype=dtype), r.rand(2, 5, 4))  # x: (B, T, HC, C); h_pre fp32
    return _case(id, make, dtype)


def mhc_post_res(x: Tensor, f_out: Tensor, h_post: Tensor, h_res: Tensor) -> Tensor:
    return LigerMHCPostResFunction.apply(x, f_out, h_post, h_res)


def mhc_post_res_ref(x, f_out, h_post, h_res):
    out = h_post.float()[..., None] * f_out.float()[..., None, :] + h_res.float() @ x.float()
    return out.to(x.dtype)


def _mhc_post_case(id, dtype=f32):
    def make(device):
        r = Inputs(device)
        B, T, HC, C = 2, 5, 4, 48
        return (r.randn(B, T, HC, C, dtype=dtype), r.randn(B, T, C, dtype=dtype), r.rand(B, T, HC),
                r.rand(B, T, HC, HC))
    return _case(id, make, dtype)


# -- mlp (transformers/mlp.py LigerFalconH1MLP: gate and down multipliers) --------------------------------------------


def mlp(x: Tensor, gate_weight: Tensor, up_weight: Tensor, down_weight: Tensor, gate_multiplier: float,
        down_multiplier: float) -> Tensor:
    return LigerMLPFunction.apply(x, gate_weight, up_weight, down_weight, float(gate_multiplier),
                                  float(down_multiplier))


def mlp_ref(x, gate_weight, up_weight, down_weight, gate_multiplier, down_multiplier):
    xf = x.float()
    a = F.silu(xf @ gate_weight.float().t() * gate_multiplier) * (xf @ up_weight.float().t())
    return ((a.to(x.dtype).float() @ down_weight.float().t()) * down_multiplier).to(x.dtype)


def _mlp_case(id, dtype, *, gm=1.0, dm=1.0):
    def make(device):
        r = Inputs(device)
        B, S, dim, hidden = 2, 8, 64, 128
        return (r.randn(B, S, dim, dtype=dtype), r.randn(hidden, dim, dtype=dtype, scale=0.1),
                r.randn(hidden, dim, dtype=dtype, scale=0.1), r.randn(dim, hidden, dtype=dtype, scale=0.1), gm, dm)
    return _case(id, make, dtype)


# -- grpo_loss (transformers/grpo_loss.py triton_grpo_loss, reduce=False, loss types without VESPO) -------------------


def grpo_loss(logits: Tensor, old_logp: Optional[Tensor], ref_logp: Optional[Tensor], completion_ids: Tensor,
              advantages: Tensor, completion_mask: Optional[Tensor], temperature: float, beta: float, eps_low: float,
              eps_high: float, inplace: bool, loss_type: str) -> tuple[Tensor, Tensor, Tensor]:
    assert logits is not None and completion_ids is not None and advantages is not None, (
        "must provide logits, completion_ids and advantages"
    )
    return GrpoLossFunction.apply(logits, old_logp, ref_logp, completion_ids, advantages, completion_mask, temperature,
                                  beta, eps_low, eps_high, inplace, loss_type, None, False, "token", 1.0, 1.05, None,
                                  None, False, None, None)


def grpo_loss_ref(logits, old_logp, ref_logp, completion_ids, advantages, completion_mask, temperature, beta,
                  eps_low, eps_high, inplace, loss_type):
    logp = torch.log_softmax(logits[:, :-1].float() / temperature, -1).gather(-1, completion_ids[..., None])[..., 0]
    old = logp.detach() if old_logp is None else old_logp.float()
    coef_1 = torch.exp(logp - old)
    coef_2 = torch.clamp(coef_1, 1 - eps_low, 1 + eps_high)
    adv = advantages.float()[:, None]
    per_token = -torch.minimum(coef_1 * adv, coef_2 * adv)
    kl = torch.exp(ref_logp.float() - logp) - (ref_logp.float() - logp) - 1
    per_token = per_token + beta * kl
    clipped = ((coef_1 < 1 - eps_low) & (adv < 0)) | ((coef_1 > 1 + eps_high) & (adv > 0))
    mask = torch.ones_like(logp) if completion_mask is None else completion_mask.float()
    # kl and is_clipped are metrics: the Function's backward takes no gradient through them
    return per_token * mask, (kl * mask).detach(), (clipped.float() * mask).detach()


def _grpo_case(id, dtype=f32, *, old=True, mask=True, inplace=False, loss_type="grpo"):
    def make(device):
        r = Inputs(device)
        B, L, N = 2, 4, 40
        logits = r.randn(B, L + 1, N, dtype=dtype)
        ids = r.randint(0, N, (B, L))
        # old policy close to the current one, so that some ratios fall inside the clip range and some outside
        cur = torch.log_softmax(logits[:, :-1].float() / 0.9, -1).gather(-1, ids[..., None])[..., 0]
        old_logp = (cur + r.randn(B, L, scale=0.3)) if old else None
        ref_logp = cur + r.randn(B, L, scale=0.2)
        adv = torch.tensor([1.0, -0.5], device=device)
        m = None
        if mask:
            m = torch.ones(B, L, dtype=torch.int64, device=device)
            m[1, -1] = 0
        return (logits, old_logp, ref_logp, ids, adv, m, 0.9, 0.04, 0.2, 0.28, inplace, loss_type)
    return _case(id, make, dtype)


# ================================================================================================
# The corpus
# ================================================================================================


def _entry(name, module, cls, body, reference, cases, grads, **kw):
    return FunctionEntry(f"liger_{name}", LIB, _fn(f"{module}.{cls}"), body, reference, cases, grads, **kw)


ENTRIES = [
    # -- runs on the CPU path (Triton's interpreter) ----------------------------------------------------------------
    _entry("relu_squared", "relu_squared", "LigerReLUSquaredFunction", relu_squared, lc.relu_squared_ref, [
        _adopt(lc._one_case("f32", (2, 3, 64))),
        _adopt(lc._one_case("f16", (7, 50), f16)),
    ], grads=(0,)),
    _entry("softmax", "softmax", "LigerSoftmaxFunction", softmax, lc.softmax_ref, [
        _adopt(lc._one_case("f32-3d", (2, 3, 70))),
        _adopt(lc._one_case("f16", (5, 300), f16)),
        _adopt(lc._one_case("bf16", (4, 128), bf16)),
    ], grads=(0,)),
    _entry("sparsemax", "sparsemax", "LigerSparsemaxFunction", sparsemax, lc.sparsemax_ref, [
        _adopt(lc._sparsemax_case("f32-lastdim", (4, 30), -1)),
        _adopt(lc._sparsemax_case("f32-dim1", (2, 9, 5), 1)),
    ], grads=(0,)),
    _entry("fused_gate_up_swiglu", "swiglu", "LigerFusedGateUpSiLUMulFunction", fused_gate_up_swiglu,
           fused_gate_up_swiglu_ref, [
               _gate_up_case("f32-2d", (6, 128)),
               _gate_up_case("f32-3d", (3, 2, 80)),
               _gate_up_case("f32-in-place", (4, 64), in_place=True),
               _gate_up_case("f16-3d", (2, 3, 96), f16),
           ], grads=(0,)),
    _entry("embedding", "experimental.embedding", "LigerEmbeddingFunction", embedding, lc.embedding_ref, [
        _adopt(lc._embedding_case("f32")),
        _adopt(lc._embedding_case("f16", f16)),
    ], grads=(0,)),
    _entry("jsd", "jsd", "LigerJSDFunction", jsd, lc.jsd_ref, [
        _adopt(lc._jsd_case("f32")),
        _adopt(lc._jsd_case("f32-forward-kl", beta=0.0)),
        _adopt(lc._jsd_case("f32-labels", labels=True)),
    ], grads=(0,), tol_scale=10),
    _entry("fused_ce_tvd", "fused_ce_tvd", "LigerFusedCETVDFunction", fused_ce_tvd, fused_ce_tvd_ref, [
        _cetvd_case("f32"),
        _cetvd_case("f32-wide", BT=4, V=300),
        _cetvd_case("f16", f16),
    ], grads=(0,), tol_scale=10),
    _entry("rope", "rope", "LigerRopeFunction", rope, lc.rope_ref, [
        _rope_case("f32"),
        _rope_case("f32-partial-rotary", rd=8),
        _rope_case("f32-per-batch-cos", cos_batch=2),
        _rope_case("f16", f16),
    ], grads=(0, 1)),
    _entry("qwen2vl_mrope", "qwen2vl_mrope", "LigerQwen2VLMRopeFunction", qwen2vl_mrope, lc.qwen2vl_mrope_ref, [
        _mrope_case("f32"),
        _mrope_case("f16", f16),
    ], grads=(0, 1)),
    _entry("llama4_rope", "llama4_rope", "LigerLlama4RopeFunction", llama4_rope, lc.llama4_rope_ref, [
        _adopt(lc._llama4_case("f32")),
        _adopt(lc._llama4_case("f16", f16)),
    ], grads=(0, 1), mutates_args=("xq", "xk"),
        python_backward="its forward rotates xq/xk in place (q.to(compute_dtype).contiguous() is q itself for the "
                        "(bsz, seq, heads, head_dim) query HF passes) and returns them, without mark_dirty: the op "
                        "returns its inputs, which no plan's tape can differentiate"),
    _entry("multi_token_attention", "multi_token_attention", "LigerMultiTokenAttentionFunction",
           multi_token_attention, lc.multi_token_attention_ref, [
               _adopt(lc._mta_case("f32-softmax")),
               _adopt(lc._mta_case("f32-sparsemax", sparse=True)),
           ], grads=(0, 1, 2), tol_scale=10),
    _entry("neighborhood_attention", "fused_neighborhood_attention", "LigerFusedNeighborhoodAttentionFunction",
           neighborhood_attention, lc.neighborhood_attention_ref, [
               _na_case("f32"),
               _na_case("f32-dilation2-scale", dilation=2, scale=0.3),
           ], grads=(0, 1, 2), tol_scale=100, tf32=True),
    _entry("attn_res", "attn_res", "LigerAttnResFunction", attn_res, lc.attn_res_ref, [
        _adopt(lc._attn_res_case("f32")),
        _adopt(lc._attn_res_case("f16", f16)),
    ], grads=(0, 1, 2), tol_scale=10, atomics=ATOMIC_ADD.format("dW_query, dW_norm")),
    _entry("mhc_pre", "mhc", "LigerMHCPreFunction", mhc_pre, lc.mhc_pre_ref, [
        _mhc_pre_case("f32"),
        _mhc_pre_case("f16", f16),
    ], grads=(0, 1), tf32=True),
    _entry("mhc_post_res", "mhc", "LigerMHCPostResFunction", mhc_post_res, mhc_post_res_ref, [
        _mhc_post_case("f32"),
        _mhc_post_case("f16", f16),
    ], grads=(0, 1, 2, 3), tf32=True),
    _entry("mhc_coeffs", "mhc", "LigerMHCCoeffsFunction", mhc_coeffs, mhc_coeffs_ref, [
        _mhc_coeffs_case("f32"),
        _mhc_coeffs_case("f16", f16),
    ], grads=(0, 1, 2, 3, 4, 5), tol_scale=10, tf32=True, atomics=ATOMIC_ADD.format("grad_phi")),
    _entry("grpo_loss", "grpo_loss", "GrpoLossFunction", grpo_loss, grpo_loss_ref, [
        _grpo_case("f32"),
        _grpo_case("f32-no-old-no-mask", old=False, mask=False),
        _grpo_case("f32-inplace-bnpo", inplace=True, loss_type="bnpo"),
    ], grads=(0,), tol_scale=10),
    _entry("cross_entropy", "cross_entropy", "LigerCrossEntropyFunction", cross_entropy, lc.cross_entropy_ref, [
        _adopt(lc._ce_case("f32-mean")),
        _adopt(lc._ce_case("f32-sum-smoothing", reduction="sum", smoothing=0.1)),
        _adopt(lc._ce_case("f16-mean", f16)),
        replace(_adopt(lc._ce_case("f32-weight", weight=True)), python_backward=(
            "with class weights the forward reads their sum as a float from the data (`.item()`), which no plan "
            "holds: those calls run the body")),
        _adopt(lc._ce_case("f32-softcap", softcap=30.0)),
        _adopt(lc._ce_case("bf16-mean", bf16)),
    ], grads=(0,), mutates_args=("input",), tol_scale=10),
    _entry("fused_linear_cross_entropy", "fused_linear_cross_entropy", "LigerFusedLinearCrossEntropyFunction",
           fused_linear_cross_entropy, fused_linear_cross_entropy_ref, [
               _flce_case("f32-mean"),
               _flce_case("f32-sum-smoothing", reduction="sum", smoothing=0.1),
               _flce_case("f16-mean", f16),
           ], grads=(0, 1, 3), tol_scale=20),
    _entry("fused_linear_jsd", "fused_linear_jsd", "LigerFusedLinearJSDFunction", fused_linear_jsd,
           fused_linear_jsd_ref, [
               _fljsd_case("f32"),
               _fljsd_case("f32-labels-temperature", labels=True, temperature=2.0),
           ], grads=(0, 1), tol_scale=10),
    _entry("fused_linear_kl_div", "fused_linear_kl_div", "LigerFusedLinearKLDivFunction", fused_linear_kl_div,
           fused_linear_kl_div_ref, [
               _flkl_case("f32"),
               _flkl_case("f32-sum-labels-temperature", reduction="sum", labels=True, temperature=2.0),
           ], grads=(0, 1), tol_scale=10),
    # -- CUDA only: Triton's interpreter cannot run the Function's kernels ------------------------------------------
    _entry("rms_norm", "rms_norm", "LigerRMSNormFunction", rms_norm, rms_norm_ref, [
        _rms_case("f32-3d", (2, 5, 96)),
        _rms_case("f16-gemma-offset", (3, 80), f16, offset=1.0, mode="gemma"),
        _rms_case("f32-not-in-place", (4, 48), in_place=False),
        _rms_case("bf16", (4, 128), bf16),
    ], grads=(0, 1), tol_scale=10, gpu_only=FLOAT_ARG_TO.format("eps")),
    _entry("fused_add_rms_norm", "fused_add_rms_norm", "LigerFusedAddRMSNormFunction", fused_add_rms_norm,
           fused_add_rms_norm_ref, [
               _fused_add_case("f32", (2, 3, 64)),
               _fused_add_case("f16-gemma", (5, 72), f16, offset=1.0, mode="gemma"),
               _fused_add_case("bf16", (4, 64), bf16),
           ], grads=(0, 1, 2), tol_scale=10, gpu_only=FLOAT_ARG_TO.format("eps")),
    _entry("modulated_rms_norm", "modulated_rms_norm", "LigerModulatedRMSNormFunction", modulated_rms_norm,
           modulated_rms_norm_ref, [
               _modulated_case("f32"),
               _modulated_case("f16", f16),
           ], grads=(0, 1, 2, 3), tol_scale=10, gpu_only=FLOAT_ARG_TO.format("eps"),
           atomics=ATOMIC_ADD.format("dscale, dshift")),
    _entry("poly_norm", "poly_norm", "LigerPolyNormFunction", poly_norm, poly_norm_ref, [
        _poly_case("f32"),
        _poly_case("bf16", bf16),
    ], grads=(0, 1, 2), tol_scale=10, gpu_only=FLOAT_ARG_TO.format("eps")),
    _entry("layer_norm", "layer_norm", "LigerLayerNormFunction", layer_norm, lc.layer_norm_ref, [
        _adopt(lc._ln_case("f32-3d", (2, 4, 100))),
        _adopt(lc._ln_case("f16", (5, 64), f16)),
        _adopt(lc._ln_case("bf16", (3, 128), bf16)),
    ], grads=(0, 1, 2), tol_scale=10, gpu_only=FLOAT_ARG_TO.format("eps")),
    _entry("group_norm", "group_norm", "LigerGroupNormFunction", group_norm, lc.group_norm_ref, [
        _adopt(lc._gn_case("f32-3d", (2, 6, 10), 3)),
        _adopt(lc._gn_case("f32-4d", (2, 4, 3, 5), 2)),
        _adopt(lc._gn_case("f16", (2, 4, 12), 2, f16)),
    ], grads=(0, 1, 2), tol_scale=10, gpu_only=FLOAT_ARG_TO.format("eps"), atomics=ATOMIC_ADD.format("dW, dB")),
    _entry("swiglu", "swiglu", "LigerSiLUMulFunction", swiglu, swiglu_ref, [
        _adopt(lc._swiglu_case("f32", (2, 3, 64))),
        _adopt(lc._swiglu_case("f16-multipliers", (5, 100), f16, gm=0.5, dm=2.0)),
        _adopt(lc._swiglu_case("bf16", (4, 128), bf16)),
    ], grads=(0, 1), gpu_only=FLOAT_ARG_TO.format("gate_multiplier")),
    _entry("geglu", "geglu", "LigerGELUMulFunction", geglu, lc.geglu_ref, [
        _adopt(lc._pair_case("f32", (2, 3, 64))),
        _adopt(lc._pair_case("f16", (7, 50), f16)),
    ], grads=(0, 1), gpu_only=LIBDEVICE.format("tanh")),
    _entry("dyt", "dyt", "LigerDyTFunction", dyt, lc.dyt_ref, [
        _adopt(lc._dyt_case("f32", (2, 3, 64))),
        _adopt(lc._dyt_case("bf16", (4, 128), bf16)),
    ], grads=(0, 1, 2, 3), tol_scale=10, gpu_only=LIBDEVICE.format("tanh")),
    _entry("mlp", "mlp", "LigerMLPFunction", mlp, mlp_ref, [
        _mlp_case("f16", f16),
        _mlp_case("f16-multipliers", f16, gm=0.5, dm=2.0),
        _mlp_case("bf16", bf16),
    ], grads=(0, 1, 2, 3), tol_scale=10,
        gpu_only="LigerMLPFunction asserts input.is_cuda (its kernels take TMA tensor descriptors); CUDA only"),
    _entry("kl_div", "kl_div", "LigerKLDivLossFunction", kl_div, lc.kl_div_ref, [
        _kl_case("f32-batchmean"),
        _kl_case("f32-none", reduction="none"),
        _kl_case("f32-sum-logtarget", reduction="sum", log_target=True),
        _kl_case("f16-mean", f16, reduction="mean"),
    ], grads=(0,), gpu_only=FLOAT_ARG_TO.format("eps")),
    _entry("tvd", "tvd", "LigerTVDLossFunction", tvd, lc.tvd_ref, [
        _adopt(lc._tvd_case("f32-batchmean")),
        _adopt(lc._tvd_case("f32-none", reduction="none")),
        _adopt(lc._tvd_case("f32-sum-labels", reduction="sum", labels=True)),
    ], grads=(0,), gpu_only=FLOAT_ARG_TO.format("scale")),
]
