"""Real host wrappers of Apple's Cut Cross-Entropy, called unchanged from torch_tile op bodies.

Library: cut-cross-entropy==25.1.1 (module ``cut_cross_entropy``), pure Python: ``pip install --no-deps
cut-cross-entropy==25.1.1``. The module is skipped without it (``pytest.importorskip``).

Entries call the public API (``linear_cross_entropy``, the ``LinearCrossEntropy`` module), the
``LinearCrossEntropyFunction.apply`` entry point (forward, and forward + ``torch.autograd.grad`` through its
backward), and the plain wrappers that Function calls (``cce_lse_forward_kernel``,
``indexed_neg_dot_forward_kernel``, ``cce_backward_kernel``). CCE's kernels are ``@triton.jit`` functions wrapped
in ``triton.heuristics`` (a fixed best config, unless ``CCE_AUTOTUNE=1`` turns them into ``triton.autotune``); its
small helpers (``softcapping``, ``sort_logit_avg``) are ``@torch.compile``d. The log-sum-exp forward merges
partial results with ``libdevice.log1p``, which Triton's interpreter does not implement, so every entry that runs
it is CUDA-only on the CPU path (``cpu_skip``); tracing needs no GPU.
"""

from typing import List, Optional, Tuple

import pytest
import torch

pytest.importorskip("cut_cross_entropy", reason="needs cut-cross-entropy==25.1.1 (pip install --no-deps "
                                                "cut-cross-entropy==25.1.1)")

from cut_cross_entropy import LinearCrossEntropy, linear_cross_entropy  # noqa: E402
from cut_cross_entropy.cce import CCEParams, LinearCrossEntropyFunction  # noqa: E402
from cut_cross_entropy.cce_backward import cce_backward_kernel  # noqa: E402
from cut_cross_entropy.cce_lse_forward import cce_lse_forward_kernel  # noqa: E402
from cut_cross_entropy.indexed_dot import indexed_neg_dot_forward_kernel  # noqa: E402

from wrapper_corpus import TAKES_ITS_OWN_GRADIENT, Case, Entry, Inputs, Tensor, bf16, f16, f32, strided  # noqa: E402

VALIDS_BY_DATA = "the trace learns the size of (targets != ignore_index).nonzero() from one run of the body"

NS = "cce"
IGNORE = -100

BF16_CPU = "bf16: Triton's interpreter computes bf16 wrongly (torch_tile refuses it on CPU)"
LOG1P = ("the log-sum-exp forward kernel merges partial sums with tl_logaddexp -> libdevice.log1p, which Triton's "
         "interpreter does not implement (it returns None there, also under TRITON_INTERPRET=1); CUDA only")
TANH = ("softcap: the kernel calls libdevice.tanh (tl_softcapping), which Triton's interpreter does not implement; "
        "CUDA only")


def _case(id, make, dtype=f32, gpu_only=""):
    return Case(id, make, dtype, gpu_only or (BF16_CPU if dtype == bf16 else ""))


def _logits(e, c, softcap=None):
    z = e.float() @ c.float().T
    return torch.tanh(z / softcap) * softcap if softcap is not None else z


def _lce_ref(e, c, targets, ignore_index=IGNORE, softcap=None, reduction="mean", shift=False):
    """Cross-entropy of e @ c.T against targets, CCE's semantics: shift predicts token t+1 from position t,
    mean/sum over the non-ignored positions, 'none' keeps the targets' shape (zeros where ignored)."""
    if shift:
        e_used, t_used = e[..., :-1, :], targets[..., 1:]
    else:
        e_used, t_used = e, targets
    z = _logits(e_used.reshape(-1, e.shape[-1]), c, softcap)
    t = t_used.reshape(-1)
    valid = t != ignore_index
    nll = torch.logsumexp(z, -1) - z.gather(1, t.clamp(min=0)[:, None])[:, 0]
    nll = torch.where(valid, nll, torch.zeros_like(nll))
    # CCE returns the loss in float32 whatever the inputs' dtype (its log-sum-exp is float32).
    if reduction == "mean":
        return nll.sum() / valid.sum()
    if reduction == "sum":
        return nll.sum()
    return nll.view(t_used.shape)


def _lce_case(id, dtype=f32, *, batch=(2, 6), D=32, V=50, ignore=0, softcap=None, reduction="mean", shift=False,
              gpu_only=""):
    def make(device):
        r = Inputs(device)
        e = r.randn(*batch, D, dtype=dtype, scale=0.5)
        c = r.randn(V, D, dtype=dtype, scale=0.5)
        t = r.randint(V, *batch)
        if ignore:
            t.view(-1)[torch.randperm(t.numel(), generator=r.g)[:ignore].to(device)] = IGNORE
        return (e, c, t, IGNORE, softcap, reduction, shift)
    return _case(id, make, dtype, gpu_only or (TANH if softcap is not None else ""))


# -- the public API -------------------------------------------------------------------------------------------


def linear_cross_entropy_op(e: Tensor, c: Tensor, targets: Tensor, ignore_index: int = IGNORE,
                            softcap: Optional[float] = None, reduction: str = "mean", shift: bool = False) -> Tensor:
    return linear_cross_entropy(e, c, targets, ignore_index, softcap, reduction, shift)


def module_op(e: Tensor, c: Tensor, targets: Tensor, ignore_index: int = IGNORE, softcap: Optional[float] = None,
              reduction: str = "mean", shift: bool = False) -> Tensor:
    loss_fn = LinearCrossEntropy(ignore_index=ignore_index, softcap=softcap, reduction=reduction, shift=shift)
    return loss_fn(e, c, targets)


def function_apply_op(e: Tensor, c: Tensor, targets: Tensor, reduction: str = "mean",
                      softcap: Optional[float] = None) -> Tensor:
    """LinearCrossEntropyFunction.apply with every position valid (valids=None), as cce_linear_cross_entropy
    calls it when no target is ignored."""
    params = CCEParams(targets.flatten(), None, softcap, reduction, None, False, targets.size())
    return LinearCrossEntropyFunction.apply(e.flatten(0, -2), c, params)


def function_apply_ref(e, c, targets, reduction="mean", softcap=None):
    return _lce_ref(e, c, targets, IGNORE, softcap, reduction, False)


def _apply_case(id, dtype=f32, reduction="mean", softcap=None):
    def make(device):
        r = Inputs(device)
        return (r.randn(2, 5, 32, dtype=dtype, scale=0.5), r.randn(40, 32, dtype=dtype, scale=0.5), r.randint(40, 2, 5),
                reduction, softcap)
    return _case(id, make, dtype)


def lce_grad_op(e: Tensor, c: Tensor, targets: Tensor, reduction: str = "mean",
                softcap: Optional[float] = None) -> Tuple[Tensor, Tensor, Tensor]:
    """Forward and backward as a training step runs them: the loss, then torch.autograd.grad through
    LinearCrossEntropyFunction's backward (cce_backward_kernel, sort_logit_avg)."""
    e = e.detach().requires_grad_(True)
    c = c.detach().requires_grad_(True)
    with torch.enable_grad():
        loss = linear_cross_entropy(e, c, targets, IGNORE, softcap, reduction)
        de, dc = torch.autograd.grad(loss, (e, c))
    return loss.detach(), de, dc


def lce_grad_ref(e, c, targets, reduction="mean", softcap=None):
    e32 = e.detach().float().requires_grad_(True)
    c32 = c.detach().float().requires_grad_(True)
    with torch.enable_grad():
        loss = _lce_ref(e32, c32, targets, IGNORE, softcap, reduction)
        de, dc = torch.autograd.grad(loss, (e32, c32))
    return loss.detach(), de.to(e.dtype), dc.to(c.dtype)


def _grad_case(id, dtype=f16, reduction="mean", softcap=None, gpu_only=""):
    def make(device):
        r = Inputs(device)
        return (r.randn(2, 8, 32, dtype=dtype, scale=0.5), r.randn(48, 32, dtype=dtype, scale=0.5), r.randint(48, 2, 8),
                reduction, softcap)
    return _case(id, make, dtype, gpu_only)


# -- the plain wrappers ----------------------------------------------------------------------------------------


def lse_forward_op(e: Tensor, c: Tensor, valids: Optional[Tensor] = None, softcap: Optional[float] = None) -> Tensor:
    return cce_lse_forward_kernel(e, c, valids, softcap=softcap)


def lse_forward_ref(e, c, valids=None, softcap=None):
    rows = e if valids is None else e[valids.long()]
    return torch.logsumexp(_logits(rows, c, softcap), -1)


def lse_logit_avg_op(e: Tensor, c: Tensor, softcap: Optional[float] = None) -> Tuple[Tensor, Tensor]:
    lse, logit_avg = cce_lse_forward_kernel(e, c, None, softcap=softcap, return_logit_avg=True)
    return lse, logit_avg


def lse_logit_avg_ref(e, c, softcap=None):
    z = _logits(e, c, softcap)
    return torch.logsumexp(z, -1), z.mean(0)


def _lse_case(id, dtype=f32, B=20, D=32, V=70, valids=False, softcap=None, with_valids_arg=True):
    def make(device):
        r = Inputs(device)
        e, c = r.randn(B, D, dtype=dtype, scale=0.5), r.randn(V, D, dtype=dtype, scale=0.5)
        v = torch.randperm(B, generator=r.g)[:B // 2].sort().values.to(dtype=torch.int32, device=device)
        if with_valids_arg:
            return (e, c, v if valids else None, softcap)
        return (e, c, softcap)
    return _case(id, make, dtype)


def indexed_neg_dot_op(e: Tensor, c: Tensor, inds: Tensor, shift: bool = False, valids: Optional[Tensor] = None,
                       softcap: Optional[float] = None, out_dtype: Optional[torch.dtype] = None) -> Tensor:
    return indexed_neg_dot_forward_kernel(e, c, inds, shift, valids, softcap, out_dtype)


def indexed_neg_dot_ref(e, c, inds, shift=False, valids=None, softcap=None, out_dtype=None):
    rows = torch.arange(e.shape[0], device=e.device) if valids is None else valids.long()
    t = inds[rows + 1] if shift else inds[rows]
    out = -(e.float()[rows] * c.float()[t.long()]).sum(-1)
    if softcap is not None:
        out = torch.tanh(out / softcap) * softcap
    return out.to(e.dtype if out_dtype is None else out_dtype)


def _dot_case(id, dtype=f32, B=24, D=40, V=30, shift=False, valids=False, softcap=None, out_dtype=None,
              layout=None):
    def make(device):
        r = Inputs(device)
        e, c = r.randn(B, D, dtype=dtype), r.randn(V, D, dtype=dtype)
        e = layout(e) if layout else e
        inds = r.randint(V, B)
        # with shift, row b is scored against inds[b + 1]: valids stay below B - 1
        v = torch.randperm(B - 1, generator=r.g)[:B // 3].sort().values.to(dtype=torch.int32, device=device)
        return (e, c, inds, shift, v if valids else None, softcap, out_dtype)
    return _case(id, make, dtype)


def backward_op(do: Tensor, e: Tensor, c: Tensor, lse: Tensor, targets: Tensor, grad_scale: float = 1.0,
                filter_eps: Optional[float] = None) -> Tensor:
    """cce_backward_kernel as LinearCrossEntropyFunction.backward calls it (no valids, no vocab ordering); c does
    not require grad inside the op, so the wrapper returns (de, None): de is the output."""
    de, _dc = cce_backward_kernel(do, e, c, lse, None, None, filter_eps, targets=targets, grad_scale=grad_scale)
    return de


def backward_ref(do, e, c, lse, targets, grad_scale=1.0, filter_eps=None):
    z = _logits(e, c)
    d = torch.exp(z - lse.float()[:, None])
    d[torch.arange(e.shape[0]), targets.long()] -= 1.0
    d = d * grad_scale * do.float().reshape(-1, 1)
    return (d @ c.float()).to(e.dtype)


def _bwd_case(id, dtype=f16, B=16, D=32, V=40, per_row=False, grad_scale=1.0, filter_eps=None):
    def make(device):
        r = Inputs(device)
        e, c = r.randn(B, D, dtype=dtype, scale=0.5), r.randn(V, D, dtype=dtype, scale=0.5)
        lse = torch.logsumexp(e.float() @ c.float().T, -1)
        do = r.rand(B) if per_row else torch.ones((), device=device)
        return (do, e, c, lse, r.randint(V, B), grad_scale, filter_eps)
    return _case(id, make, dtype)


# ================================================================================================
# The corpus
# ================================================================================================


def _e(name, wrapper, body, reference, cases, **kw):
    return Entry(name, wrapper, body, reference, cases, namespace=NS, **kw)


ENTRIES: List[Entry] = [
    _e("linear_cross_entropy", "cut_cross_entropy.linear_cross_entropy", linear_cross_entropy_op, _lce_ref, [
        _lce_case("f32-mean"),
        _lce_case("f16-sum-ignore", f16, reduction="sum", ignore=3),
        _lce_case("f32-none-ignore", reduction="none", ignore=2),
        _lce_case("f16-shift-mean", f16, shift=True),
        _lce_case("f32-softcap", softcap=20.0),
        _lce_case("bf16-mean", bf16),
    ], cpu_skip=LOG1P, tol_scale=10, trace_runs_body=VALIDS_BY_DATA,
        notes="(targets != ignore_index).nonzero() (valids: data-dependent size), match on str impl, "
              "LinearCrossEntropyFunction.apply with a dataclass argument, heuristics-wrapped kernels, atomics "
              "and an atomic_cas spin lock in the kernel, nll.mean()/sum() after the launches, "
              "full_loss[valids] = loss (index_put) for 'none'"),
    _e("LinearCrossEntropy", "cut_cross_entropy.LinearCrossEntropy (nn.Module)", module_op, _lce_ref, [
        _lce_case("f32-mean"),
        _lce_case("f16-none", f16, reduction="none"),
    ], cpu_skip=LOG1P, tol_scale=10, trace_runs_body=VALIDS_BY_DATA,
        notes="an nn.Module built in the body, its forward calling linear_cross_entropy (filter_eps='high')"),
    _e("function_apply", "LinearCrossEntropyFunction.apply", function_apply_op, function_apply_ref, [
        _apply_case("f32-mean"),
        _apply_case("f16-sum", f16, reduction="sum"),
        _apply_case("f32-none", reduction="none"),
    ], cpu_skip=LOG1P, tol_scale=10,
        notes="torch.autograd.Function.apply on inputs that need no grad, a CCEParams dataclass (tensors, a "
              "torch.Size) as a non-tensor Function argument, neg_dot.add_(lse) in place, loss.view(batch_shape)"),
    _e("lce_grad", "linear_cross_entropy + torch.autograd.grad (LinearCrossEntropyFunction.backward)", lce_grad_op,
       lce_grad_ref, [
           _grad_case("f16-mean"),
           _grad_case("f16-sum", reduction="sum"),
           _grad_case("bf16-mean", bf16, gpu_only=BF16_CPU),
       ], cpu_skip=LOG1P, tol_scale=10, trace_runs_body=VALIDS_BY_DATA, refused=TAKES_ITS_OWN_GRADIENT,
        refused_because="the body takes its own gradient (torch.autograd.grad), which a trace's stand-ins cannot: "
                        "its calls run the body",
        notes="requires_grad_ + enable_grad inside the body, autograd.grad through Function.backward: "
              "sort_logit_avg (@torch.compile'd argsort), logit_avg atomics, cce_backward_kernel with locks"),
    _e("lse_forward", "cut_cross_entropy.cce_lse_forward.cce_lse_forward_kernel", lse_forward_op, lse_forward_ref, [
        _lse_case("f32"),
        _lse_case("f16-valids", f16, valids=True),
        _lse_case("f32-softcap", softcap=15.0),
    ], cpu_skip=LOG1P, tol_scale=10,
        notes="e.new_full(..., -inf), uint32 lock tensor (atomic_cas spin lock), heuristics over None-ness "
              "(HAS_VALIDS/HAS_SOFTCAP/HAS_LA) and torch.get_float32_matmul_precision() (global state) as constexprs, "
              "lambda grid reading META, b_bin_fn(B) a Python branch on a size"),
    _e("lse_logit_avg", "cce_lse_forward_kernel(return_logit_avg=True)", lse_logit_avg_op, lse_logit_avg_ref, [
        _lse_case("f32", with_valids_arg=False),
        _lse_case("f16", f16, with_valids_arg=False),
    ], cpu_skip=LOG1P, tol_scale=10,
        notes="the same kernel with an atomic_add'ed logit average (a second, zero-filled output)"),
    _e("indexed_neg_dot", "cut_cross_entropy.indexed_dot.indexed_neg_dot_forward_kernel", indexed_neg_dot_op,
       indexed_neg_dot_ref, [
           _dot_case("f32"),
           _dot_case("f16-out-f32", f16, out_dtype=f32),
           _dot_case("f32-valids-shift", valids=True, shift=True),
           _dot_case("f32-softcap", softcap=4.0),
           _dot_case("f32-strided-e", layout=strided),
           _dot_case("bf16", bf16),
       ], tol_scale=10,
        notes="heuristics (EVEN_D, HAS_VALIDS from None-ness, GROUP_B) over a fixed heuristics 'best config', "
              "atomic_add into e.new_zeros(dtype=f32), softcap through a @torch.compile'd helper (softcapping) "
              "after the launch, Optional[dtype] argument, out.to(out_dtype)"),
    _e("backward", "cut_cross_entropy.cce_backward.cce_backward_kernel", backward_op, backward_ref, [
        _bwd_case("f16-scalar-grad"),
        _bwd_case("f16-per-row-grad-scaled", per_row=True, grad_scale=0.25),
        _bwd_case("f16-filtered", filter_eps=1e-7),
    ], tol_scale=3,
        notes="heuristics with ITEM_DO = dOut.numel() == 1, REQUIRES_GRAD from c.requires_grad (False in an op: "
              "dc = c, the kernel gets c twice), torch.zeros_like for de, int32 lock tensors, float grad_scale, "
              "Optional[float] filter_eps as a heuristic; returns (de, None)"),
]

BY_NAME = {e.name: e for e in ENTRIES}
