"""autograd.Functions of cut-cross-entropy, lightning-attn, torchao and other libraries (tests/function_corpus.py).

lightning-attn==0.0.5, cut-cross-entropy==25.1.1, torchao==0.18.0 (conch-triton-kernels 1.3 defines no
autograd.Function)."""

import math
from typing import Optional

import torch

from function_corpus import FunctionCase, FunctionEntry, Inputs, bf16, f16, f32

# without the library: an ImportError, which skips this corpus (tests/corpus_cut_cross_entropy.py, imported below,
# would skip the test module instead)
import cut_cross_entropy  # noqa: F401
from lightning_attn.ops import lightning_attn_func
from lightning_attn.ops.triton import lightning_attn2_no_decay
from lightning_attn.ops.triton.srmsnorm import _SrmsNorm
from torchao.prototype.paretoq.models.utils_quant import LsqBinaryTernaryExtension, StretchedElasticQuant
from torchao.prototype.quantized_training.int8_mixed_precision import (
    Int8MixedPrecisionTrainingConfig,
    _Int8MixedPrecisionTrainingLinearFunction,
)
from torchao.sparsity.supermask import ApplyMask, GetSubnet

import corpus_cut_cross_entropy as cce

Tensor = torch.Tensor


def _ste(value, *terms):
    """``value`` (detached) whose gradient is that of the sum of ``terms`` (each contributes t - t.detach())."""
    out = value.detach()
    for t in terms:
        out = out + (t - t.detach())
    return out


# -- lightning-attn ---------------------------------------------------------------------------------------------


def srms_norm(x: Tensor, eps: float) -> Tensor:
    return _SrmsNorm.apply(x, eps)  # lightning_attn.ops.triton.srmsnorm.SimpleRMSNorm.forward


def srms_norm_reference(x, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _srms(id, shape, dtype=f32):
    def make(device):
        return (Inputs(device).randn(*shape, dtype=dtype), 1e-6)
    return FunctionCase(id, make, dtype)


def lightning_attn(q: Tensor, k: Tensor, v: Tensor, s: Tensor) -> Tensor:
    # The public interface: pads v's feature dim to a power of 2, applies LightningAttention2 (lightning_attn2).
    return lightning_attn_func(q, k, v, s)


def lightning_attn_no_decay(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    # lightning_attn_func(q, k, v) without s names an undefined q1 for d <= 128 (a library bug): the Function as
    # its export lightning_attn.ops.triton.lightning_attn2_no_decay (= LightningAttention2NoDecay.apply, bound when
    # the module is imported) applies it, which is what lightning_attn_func calls.
    return lightning_attn2_no_decay(q, k, v)


def linear_attention_reference(q, k, v, s=None):
    """Causal linear attention: o_i = sum_{j <= i} exp(-s_h (i - j)) (q_i . k_j) v_j (no decay: s = 0)."""
    n = q.shape[-2]
    i = torch.arange(n, device=q.device, dtype=torch.float32)
    dist = i[:, None] - i[None, :]
    causal = dist >= 0
    if s is None:
        mask = causal.float()
    else:
        rate = s.float().reshape(-1, 1, 1)  # per head
        mask = torch.where(causal, torch.exp(-rate * dist.clamp(min=0)), torch.zeros((), device=q.device))
    scores = (q.float() @ k.float().transpose(-1, -2)) * mask
    return (scores @ v.float()).to(q.dtype)


def lightning_attn_reference(q, k, v, s):
    return linear_attention_reference(q, k, v, s)


def lightning_attn_no_decay_reference(q, k, v):
    return linear_attention_reference(q, k, v)


def _lightning(id, b, h, n, d, e, decay=True, dtype=f32, gpu_only="", tol_scale=1.0):
    def make(device):
        r = Inputs(device)
        q, k, v = (r.randn(b, h, n, d, dtype=dtype, scale=0.3), r.randn(b, h, n, d, dtype=dtype, scale=0.3),
                   r.randn(b, h, n, e, dtype=dtype, scale=0.3))
        if not decay:
            return (q, k, v)
        # lightning-attn's slopes: 2 ** (-8 / h * (i + 1)) per head, shaped (h, 1, 1)
        s = torch.tensor([2 ** (-8 / h * (i + 1)) for i in range(h)], dtype=torch.float32).view(h, 1, 1)
        return (q, k, v, s.to(device))
    return FunctionCase(id, make, dtype, gpu_only=gpu_only, tol_scale=tol_scale)


# On CUDA the kernels' fp32 tl.dot runs in tf32 (Triton's default), over up to 128 positions.
LIGHTNING_TOL = 30.0
BF16_CPU = "bf16: Triton's interpreter computes bf16 wrongly (torch_tile refuses it on CPU)"


# -- cut-cross-entropy ------------------------------------------------------------------------------------------

LOG1P = ("CCE's log-sum-exp forward kernel merges partial sums with tl_logaddexp -> libdevice.log1p, which Triton's "
         "interpreter does not implement (the library's own call fails: InterpreterError AttributeError(\"'NoneType' "
         "object has no attribute 'type'\") in _cce_lse_forward_kernel); CUDA only")
CCE_REQUIRES_GRAD = ("LinearCrossEntropyFunction.forward reads e.requires_grad / c.requires_grad (needs_grad -> "
                     "return_logit_avg): its forward differs between calls that need a gradient and calls that do not")


def _cce(id, dtype=f32, batch=(2, 6), D=32, V=50, ignore=0, softcap=None, reduction="mean", shift=False,
         tol_scale=10.0):
    # the body, reference and seeded inputs of tests/corpus_cut_cross_entropy.py's linear_cross_entropy entry
    case = cce._lce_case(id, dtype, batch=batch, D=D, V=V, ignore=ignore, softcap=softcap, reduction=reduction,
                         shift=shift)
    return FunctionCase(id, case.make, dtype, gpu_only=LOG1P, tol_scale=tol_scale)


# -- torchao ----------------------------------------------------------------------------------------------------


def torchao_int8_mixed_precision_linear(input: Tensor, weight: Tensor, bias: Optional[Tensor], output: bool = True,
                                        grad_input: bool = True, grad_weight: bool = True) -> Tensor:
    # torchao.prototype.quantized_training.int8_mixed_precision.Int8MixedPrecisionTrainingLinear.forward (module swap)
    config = Int8MixedPrecisionTrainingConfig(output, grad_input, grad_weight, module_swap=True)
    return _Int8MixedPrecisionTrainingLinearFunction.apply(input, weight, bias, config)


def _dequantized_rows(x):
    """torchao's dynamic row-wise int8 quantization (quantize_int8_rowwise: absmax / 127 scale, x * (1 / scale)
    rounded to nearest), dequantized."""
    scale = x.abs().amax(1) / 127
    q = (x.float() * (1.0 / scale.float().clip(1e-12)).view(-1, 1)).round().clip(-128, 127)
    return q * scale.view(-1, 1)


def _dequantized_cols(x):
    return _dequantized_rows(x.T).T


def _with_gradient(t, fn):
    """t, whose gradient is replaced by fn(gradient)."""
    t.register_hook(fn)
    return t


def torchao_int8_mixed_precision_linear_reference(input, weight, bias, output=True, grad_input=True, grad_weight=True):
    """y = x W^T (+ b), each matmul the forward and backward run on dynamically int8-quantized operands where the
    config says so: y = q_rows(x) q_cols(W^T); dL/dx = q_rows(g) q_cols(W); dL/dW = (q_rows(x^T) q_cols(g))^T."""
    x = input.reshape(-1, input.shape[-1])
    xd, wd = x.detach(), weight.detach()
    value = _dequantized_rows(xd) @ _dequantized_cols(wd.T) if output else xd @ wd.T
    if grad_input:  # x's path: g quantized per row, W per column
        x_term = _with_gradient(x @ _dequantized_cols(wd).T, _dequantized_rows)
    else:
        x_term = x @ wd.T
    if grad_weight:  # W's path: g quantized per column, x per column
        w_term = _with_gradient(_dequantized_cols(xd) @ weight.T, _dequantized_cols)
    else:
        w_term = xd @ weight.T
    out = _ste(value, x_term, w_term).view(*input.shape[:-1], weight.shape[0])
    return out + bias if bias is not None else out


def _int8mp(id, shape, N, flags=(True, True, True), tol_scale=1.0):
    def make(device):
        r = Inputs(device)
        x = r.randn(*shape, scale=0.5)
        w = r.randn(N, shape[-1], scale=0.5)
        b = r.randn(N, scale=0.5)
        return (x, w, b, *flags)
    return FunctionCase(id, make, f32, tol_scale=tol_scale)


def torchao_lsq_binary_ternary(weight: Tensor, weight_clip_val: Tensor, w_bits: int, weight_layerwise: bool) -> Tensor:
    # torchao.prototype.paretoq.models.utils_quant.QuantizeLinear.forward's weight, w_bits 1, 3 or 4
    return LsqBinaryTernaryExtension.apply(weight, weight_clip_val, w_bits, weight_layerwise)


def torchao_stretched_elastic_quant(weight: Tensor, weight_clip_val: Tensor, w_bits: int,
                                    weight_layerwise: bool) -> Tensor:
    # torchao.prototype.paretoq.models.utils_quant.QuantizeLinear.forward's weight, w_bits 0 or 2
    return StretchedElasticQuant.apply(weight, weight_clip_val, w_bits, weight_layerwise)


def _lsq_reference(w, alpha, value_of, bounds, coefs, grad_scale, binary=False):
    """Learned step-size quantization: w_q = value_of(w / alpha) * alpha (alpha at least 1e-5). dL/dw = g where
    lo <= w / alpha <= hi (``bounds``; straight through), else 0; dL/dalpha = g * grad_scale * (``coefs``' first
    below, second above, value_of(q) - q within; sign(w) everywhere if ``binary``), summed over what alpha
    broadcasts over."""
    a = torch.where(alpha > 1e-5, alpha, torch.full_like(alpha, 1e-5)).detach()
    q = w.detach() / a
    below, above = q < bounds[0], q > bounds[1]
    within = ~(below | above)
    if binary:
        coef = w.detach().sign()
    else:
        coef = torch.where(below, torch.full_like(q, coefs[0]),
                           torch.where(above, torch.full_like(q, coefs[1]), value_of(q) - q))
    return _ste(value_of(q) * a, w * within.to(w.dtype), alpha * (coef * grad_scale))


def torchao_lsq_binary_ternary_reference(weight, weight_clip_val, w_bits, weight_layerwise):
    qn, qp = (-1, 1) if w_bits in (0, 1) else (-(2 ** (w_bits - 1)), 2 ** (w_bits - 1) - 1)
    grad_scale = 1.0 / math.sqrt(weight.numel() * qp)
    value_of = torch.sign if w_bits == 1 else (lambda q: q.round().clamp(qn, qp))
    return _lsq_reference(weight, weight_clip_val, value_of, (qn, qp), (qn, qp), grad_scale, binary=w_bits == 1)


def torchao_stretched_elastic_quant_reference(weight, weight_clip_val, w_bits, weight_layerwise):
    grad_scale = 1.0 / math.sqrt(weight.numel())  # the forward's Qp is 1 for w_bits 0 and 2 when it computes it
    clip = 1 - 1e-2
    n_levels, shift = (1.5, 0.0) if w_bits == 0 else (2 ** (w_bits - 1), 0.5)
    qp = (n_levels - shift) / n_levels

    def value_of(q):
        return (torch.round(torch.clamp(q, -clip, clip) * n_levels - shift) + shift) / n_levels
    return _lsq_reference(weight, weight_clip_val, value_of, (-clip, clip), (-qp, qp), grad_scale)


def _lsq(id, out_features, in_features, w_bits, layerwise=False):
    def make(device):
        r = Inputs(device)
        w = r.randn(out_features, in_features, scale=0.5)
        # QuantizeLinear's weight_clip_val: (out_features, 1), a positive step size per row
        # layerwise: one step size, shaped (1,) like the gradient the backward returns for it
        clip = r.rand(*((1,) if layerwise else (out_features, 1))) * 0.3 + 0.1
        return (w, clip, w_bits, layerwise)
    return FunctionCase(id, make, f32)


def torchao_supermask_get_subnet(scores: Tensor, sparsity: float) -> Tensor:
    # torchao.sparsity.supermask.SupermaskLinear.get_mask (blocksize 1)
    return GetSubnet.apply(scores, torch.zeros_like(scores), torch.ones_like(scores), sparsity)


def torchao_supermask_masked_weight(weight: Tensor, scores: Tensor, sparsity: float) -> Tensor:
    # torchao.sparsity.supermask.SupermaskLinear.forward (blocksize 1) up to its F.linear
    subnet = GetSubnet.apply(scores, torch.zeros_like(scores), torch.ones_like(scores), sparsity)
    return ApplyMask.apply(weight, subnet)


def _topk_mask(scores, sparsity):
    flat = scores.detach().reshape(-1)
    k = 1 + round(0.01 * float(sparsity * 100) * (flat.numel() - 1))  # round half to even, as the forward
    kth = torch.sort(flat).values[k - 1]
    return (scores.detach() >= kth).to(scores.dtype)


def torchao_supermask_get_subnet_reference(scores, sparsity):
    return _ste(_topk_mask(scores, sparsity), scores)


def torchao_supermask_masked_weight_reference(weight, scores, sparsity):
    # ApplyMask's gradient is the output's gradient for both the weight and the mask (straight through).
    return _ste(weight.detach() * _topk_mask(scores, sparsity), weight, scores)


def _subnet(id, shape, sparsity, with_weight=False):
    def make(device):
        r = Inputs(device)
        w = r.randn(*shape) if with_weight else None
        scores = r.randn(*shape)
        return (w, scores, sparsity) if with_weight else (scores, sparsity)
    return FunctionCase(id, make, f32)


ENTRIES = [
    FunctionEntry("lightning_srms_norm", "lightning-attn", "lightning_attn.ops.triton.srmsnorm._SrmsNorm", srms_norm,
                  srms_norm_reference, [_srms("f32-2d", (16, 64)), _srms("f32-3d", (2, 5, 96)),
                                        _srms("f16", (8, 128), f16)], grads=(0,)),
    FunctionEntry("lightning_attn2", "lightning-attn",
                  "lightning_attn.ops.triton.lightning_attn2.LightningAttention2", lightning_attn,
                  lightning_attn_reference,
                  [_lightning("f32-n64", 1, 2, 64, 32, 32), _lightning("f32-n100", 2, 2, 100, 32, 64),
                   _lightning("bf16", 1, 4, 128, 64, 64, dtype=bf16, gpu_only=BF16_CPU)],
                  grads=(0, 1, 2), tol_scale=LIGHTNING_TOL, tf32=True),
    FunctionEntry("lightning_attn2_no_decay", "lightning-attn",
                  "lightning_attn.ops.triton.lightning_attn2_no_decay.LightningAttention2NoDecay",
                  lightning_attn_no_decay, lightning_attn_no_decay_reference,
                  [_lightning("f32-n64", 1, 2, 64, 16, 32, decay=False),
                   _lightning("f32-n100", 1, 2, 100, 32, 32, decay=False)],
                  grads=(0, 1, 2), tol_scale=LIGHTNING_TOL, tf32=True),
    FunctionEntry("cce_linear_cross_entropy", "cut-cross-entropy",
                  "cut_cross_entropy.cce.LinearCrossEntropyFunction", cce.linear_cross_entropy_op, cce._lce_ref,
                  # its backward takes 16-bit embeddings only ("Backwards requires embeddings to be bf16 or fp16")
                  [_cce("bf16-mean", bf16), _cce("f16-sum-ignore", f16, ignore=3, reduction="sum"),
                   _cce("bf16-none-shift", bf16, reduction="none", shift=True, ignore=2)],
                  grads=(0, 1), python_backward=CCE_REQUIRES_GRAD, tf32=True,
                  atomics="its log-sum-exp forward accumulates partial sums with atomics"),
    FunctionEntry("torchao_int8_mixed_precision_linear", "torchao",
                  "torchao.prototype.quantized_training.int8_mixed_precision._Int8MixedPrecisionTrainingLinearFunction",
                  torchao_int8_mixed_precision_linear, torchao_int8_mixed_precision_linear_reference,
                  [_int8mp("f32-3d-bias", (2, 8, 32), 24), _int8mp("f32-2d", (16, 48), 32),
                   _int8mp("f32-hp-backward", (4, 32), 16, flags=(True, False, False))],
                  grads=(0, 1, 2)),
    FunctionEntry("torchao_lsq_binary_ternary", "torchao",
                  "torchao.prototype.paretoq.models.utils_quant.LsqBinaryTernaryExtension",
                  torchao_lsq_binary_ternary, torchao_lsq_binary_ternary_reference,
                  [_lsq("1bit", 8, 32, 1), _lsq("3bit", 16, 24, 3), _lsq("4bit-layerwise", 8, 16, 4, True)],
                  grads=(0, 1)),
    FunctionEntry("torchao_stretched_elastic_quant", "torchao",
                  "torchao.prototype.paretoq.models.utils_quant.StretchedElasticQuant",
                  torchao_stretched_elastic_quant, torchao_stretched_elastic_quant_reference,
                  [_lsq("2bit", 8, 32, 2), _lsq("0bit", 16, 24, 0)], grads=(0, 1)),
    FunctionEntry("torchao_supermask_get_subnet", "torchao", "torchao.sparsity.supermask.GetSubnet",
                  torchao_supermask_get_subnet, torchao_supermask_get_subnet_reference,
                  [_subnet("f32-2d", (16, 24), 0.5), _subnet("f32-sparse", (8, 8), 0.9)], grads=(0,)),
    FunctionEntry("torchao_supermask_apply_mask", "torchao", "torchao.sparsity.supermask.ApplyMask",
                  torchao_supermask_masked_weight, torchao_supermask_masked_weight_reference,
                  [_subnet("f32-2d", (16, 24), 0.5, with_weight=True)], grads=(0, 1)),
]
