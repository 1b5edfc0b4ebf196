"""Cross-entropy over the rows of a 2-D logits tensor, forward and backward.

* ``tile::cross_entropy(logits, target) -> (loss, lse)``: per row
  ``lse = logsumexp(logits[row])`` and ``loss = lse - logits[row, target[row]]``;
  both are float32 vectors of shape ``(rows,)`` (float64 for float64 logits).
  The caller reduces (``loss.mean()``...).
* ``tile::cross_entropy_backward(grad_loss, logits, target, lse) -> grad_logits``:
  ``grad_logits[row] = grad_loss[row] * (softmax(logits[row]) - one_hot(target[row]))``
  in logits' dtype; ``grad_loss`` has one value per row (any stride, so the
  expanded gradient of ``loss.mean()`` is read as is).

``target`` is int64 (or int32). A negative target (PyTorch's ``ignore_index=-100``)
marks a row to ignore: its loss and gradient are 0 (the caller's mean should
then divide by the number of kept rows). A target >= vocab gives NaN loss and
gradient for its row. Vocabularies of any size are streamed in chunks of at
most 4096 columns with an online logsumexp. ``cross_entropy`` has autograd (lse
is a non-differentiable output; target gets no gradient).
"""

import torch
import triton
import triton.language as tl

import torch_tile as tt

from ._common import acc_dtype, check_2d, check_float, check_same, check_vector, stats_dtype

MAX_BLOCK = 4096


@triton.jit
def cross_entropy_kernel(loss_ptr, lse_ptr, logits_ptr, target_ptr, l_stride0, l_stride1, t_stride, n_cols,
                         BLOCK: tl.constexpr, ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * l_stride0
    cols = tl.arange(0, BLOCK)
    # Online logsumexp; the first chunk (never empty: n_cols >= 1) starts the running max m and sum s.
    x = tl.load(row_ptr + cols * l_stride1, mask=cols < n_cols, other=-float("inf")).to(ACC)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    for start in range(BLOCK, n_cols, BLOCK):
        c = start + cols
        x = tl.load(row_ptr + c * l_stride1, mask=c < n_cols, other=-float("inf")).to(ACC)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    t = tl.load(target_ptr + row * t_stride).to(tl.int64)
    valid = (t >= 0) & (t < n_cols)
    x_t = tl.load(row_ptr + t * l_stride1, mask=valid, other=0.0).to(ACC)
    loss = tl.where(valid, lse - x_t, tl.where(t < 0, 0.0, float("nan")))
    tl.store(loss_ptr + row, loss.to(loss_ptr.dtype.element_ty))
    tl.store(lse_ptr + row, lse.to(lse_ptr.dtype.element_ty))


@triton.jit
def cross_entropy_backward_kernel(grad_ptr, grad_loss_ptr, logits_ptr, target_ptr, lse_ptr, gl_stride, l_stride0,
                                  l_stride1, t_stride, lse_stride, g_stride, n_cols, BLOCK: tl.constexpr,
                                  ACC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    t = tl.load(target_ptr + row * t_stride).to(tl.int64)
    dl = tl.load(grad_loss_ptr + row * gl_stride).to(ACC)
    lse = tl.load(lse_ptr + row * lse_stride).to(ACC)
    # Ignored rows (t < 0) get 0; out-of-range targets NaN, as their loss.
    dl = tl.where(t < 0, 0.0, tl.where(t < n_cols, dl, float("nan")))
    for start in range(0, n_cols, BLOCK):
        c = start + cols
        mask = c < n_cols
        x = tl.load(logits_ptr + row * l_stride0 + c * l_stride1, mask=mask, other=0.0).to(ACC)
        p = tl.exp(x - lse)
        g = dl * (p - tl.where(c == t, 1.0, 0.0))
        tl.store(grad_ptr + row * g_stride + c, g.to(grad_ptr.dtype.element_ty), mask=mask)


def _check_inputs(op: str, logits, target) -> None:
    check_2d(op, "logits", logits)
    check_float(op, "logits", logits)
    if logits.shape[1] == 0:
        raise ValueError(f"{op}: logits need at least one column (class)")
    if target.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{op}: target must be int64 (or int32) class indices, got {target.dtype}")
    check_vector(op, "target", target, logits.shape[0], "logits.shape[0]")


@tt.op("tile::cross_entropy")
def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row cross-entropy loss and logsumexp of ``logits`` (rows, vocab) against class indices ``target``."""
    _check_inputs("tile::cross_entropy", logits, target)
    n_rows, n_cols = logits.shape
    loss = torch.empty((n_rows,), dtype=stats_dtype(logits.dtype), device=logits.device)
    lse = torch.empty((n_rows,), dtype=stats_dtype(logits.dtype), device=logits.device)
    BLOCK = tt.sym_min(triton.next_power_of_2(n_cols), MAX_BLOCK)
    num_warps = 4 if BLOCK < 2048 else 8
    cross_entropy_kernel[(n_rows,)](loss, lse, logits, target, logits.stride(0), logits.stride(1), target.stride(0),
                                    n_cols, BLOCK=BLOCK, ACC=acc_dtype(logits.dtype), num_warps=num_warps)
    return loss, lse


@tt.op("tile::cross_entropy_backward")
def cross_entropy_backward(grad_loss: torch.Tensor, logits: torch.Tensor, target: torch.Tensor,
                           lse: torch.Tensor) -> torch.Tensor:
    """Gradient of the per-row loss of ``tile::cross_entropy`` with respect to ``logits``."""
    op = "tile::cross_entropy_backward"
    _check_inputs(op, logits, target)
    n_rows, n_cols = logits.shape
    check_vector(op, "lse", lse, n_rows, "logits.shape[0]")
    if lse.dtype != stats_dtype(logits.dtype):
        raise ValueError(f"{op}: lse must be {stats_dtype(logits.dtype)} for logits of {logits.dtype}, got {lse.dtype}")
    check_same(op, "grad_loss", grad_loss, "lse", lse)
    grad = torch.empty((n_rows, n_cols), dtype=logits.dtype, device=logits.device)
    BLOCK = tt.sym_min(triton.next_power_of_2(n_cols), MAX_BLOCK)
    num_warps = 4 if BLOCK < 2048 else 8
    cross_entropy_backward_kernel[(n_rows,)](
        grad, grad_loss, logits, target, lse, grad_loss.stride(0), logits.stride(0), logits.stride(1),
        target.stride(0), lse.stride(0), grad.stride(0), n_cols, BLOCK=BLOCK, ACC=acc_dtype(logits.dtype),
        num_warps=num_warps)
    return grad


def _cross_entropy_setup(ctx, inputs, output):
    logits, target = inputs
    _loss, lse = output
    ctx.save_for_backward(logits, target, lse)
    ctx.mark_non_differentiable(lse)


def _cross_entropy_backward(ctx, grad_loss, _grad_lse):
    logits, target, lse = ctx.saved_tensors
    return cross_entropy_backward(grad_loss, logits, target, lse), None


cross_entropy.register_autograd(_cross_entropy_backward, setup_context=_cross_entropy_setup)
