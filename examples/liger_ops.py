"""Liger-Kernel's forward wrappers, unchanged, as native torch ops in a tiny model.

    python examples/liger_ops.py

Liger's host wrappers rms_norm_forward, swiglu_forward and rope_forward are
registered with one ``torch_tile.op`` each and appear as
``torch.ops.liger.rms_norm``, ``.swiglu`` and ``.rope_out_of_place`` (rope_forward
on copies of q and k: the wrapper writes its inputs in place or into copies
depending on their layout, an aliasing no torch.library schema can express).
cross_entropy_forward reads tensor data on the host
(``(target != ignore_index).sum().item()``), which a launch plan cannot hold: its
op runs by the fallback (the body in Python, as torch.library.triton_op runs it),
and the script prints the reason torch_tile gives and checks the loss against
torch's. The op bodies live in tests/liger_corpus.py (the corpus
tests/test_real_wrappers.py checks): each calls the wrapper exactly as Liger's
autograd Function does, e.g.

    def rms_norm(X: Tensor, W: Optional[Tensor], eps: float, offset: float = 0.0,
                 casting_mode: str = "llama", row_mode: Optional[bool] = None) -> Tensor:
        X, W = _contiguous(X, W)  # LigerRMSNormFunction.forward is @ensure_contiguous
        Y, X, RSTD, BLOCK_SIZE, num_warps, casting_mode = rms_norm_forward(X, W, eps, offset, casting_mode, row_mode)
        return Y

A small decoder block (embedding, RMSNorm, attention with RoPE, SwiGLU MLP,
LM head, cross-entropy) runs once with the ops and once with plain torch; the
script prints each op's largest difference from torch on the same inputs and
the loss difference. Needs a CUDA GPU and liger-kernel
(``pip install --no-deps wheels/liger_kernel-0.8.5-py3-none-any.whl``).
"""

from __future__ import annotations

import pathlib
import sys
import types

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

OPS = ("rms_norm", "swiglu", "rope_out_of_place")


def register():
    """torch.ops.liger.{rms_norm, swiglu, rope_out_of_place, cross_entropy}, and the corpus' torch references."""
    import liger_corpus as corpus  # imports liger_kernel

    for name in (*OPS, "cross_entropy"):
        corpus.BY_NAME[name].op()  # torch_tile.op("liger::<name>", body, mutates_args=...)
    return {name: corpus.BY_NAME[name].reference for name in OPS}


def cross_entropy_fallback(device) -> tuple[str, float]:
    """Why Liger's cross_entropy_forward falls back (the reason torch_tile records) and |op - torch| of the loss."""
    import warnings

    import liger_corpus as corpus

    logits, target = torch.randn(8, 16, device=device), torch.randint(0, 16, (8,), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the fallback's warning: its reason is printed instead
        loss = torch.ops.liger.cross_entropy(logits, target)
    op = corpus.BY_NAME["cross_entropy"].op()
    reason = next(iter(op.fallback_calls), "none (the op ran a native plan: update this example)")
    return reason, abs(loss.item() - F.cross_entropy(logits, target).item())


class Checked:
    """Calls torch.ops.liger.<name> and, on clones of the same inputs (Liger's rope and cross-entropy write
    into theirs), the torch reference; keeps the largest difference."""

    def __init__(self, name, reference):
        self.name, self.reference, self.max_error = name, reference, 0.0
        self.op = getattr(torch.ops.liger, name)

    def __call__(self, *args):
        cloned = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        expected = self.reference(*cloned)
        result = self.op(*args)
        pairs = zip(result, expected) if isinstance(result, tuple) else [(result, expected)]
        for r, e in pairs:
            self.max_error = max(self.max_error, (r.float() - e.float()).abs().max().item())
        return result


def make_params(V=256, d=128, heads=4, ffn=256, device="cuda"):
    g = torch.Generator().manual_seed(0)

    def w(*shape, scale):
        return (torch.randn(*shape, generator=g) * scale).to(device)

    return types.SimpleNamespace(
        heads=heads, emb=w(V, d, scale=1.0), n1=1 + w(d, scale=0.1), n2=1 + w(d, scale=0.1), n3=1 + w(d, scale=0.1),
        wq=w(d, d, scale=d ** -0.5), wk=w(d, d, scale=d ** -0.5), wv=w(d, d, scale=d ** -0.5),
        wo=w(d, d, scale=d ** -0.5), wg=w(d, ffn, scale=d ** -0.5), wu=w(d, ffn, scale=d ** -0.5),
        wd=w(ffn, d, scale=ffn ** -0.5), lm=w(d, V, scale=d ** -0.5),
    )


def rope_tables(seq, head_dim, device):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim))
    freqs = torch.arange(seq, dtype=torch.float32, device=device)[:, None] * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)[None]  # (1, seq, head_dim)
    return emb.cos(), emb.sin()


def forward(p, tokens, targets, ops):
    """A decoder block and the LM loss; ``ops`` supplies rms_norm, swiglu and rope_out_of_place."""
    b, s = tokens.shape
    d = p.emb.shape[1]
    hd = d // p.heads
    cos, sin = rope_tables(s, hd, tokens.device)
    x = p.emb[tokens]
    h = ops.rms_norm(x, p.n1, 1e-6)
    q = (h @ p.wq).view(b, s, p.heads, hd).transpose(1, 2)  # the HF layout
    k = (h @ p.wk).view(b, s, p.heads, hd).transpose(1, 2)
    v = (h @ p.wv).view(b, s, p.heads, hd).transpose(1, 2)
    q, k = ops.rope_out_of_place(q, k, cos, sin)
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + attn.transpose(1, 2).reshape(b, s, d) @ p.wo
    h = ops.rms_norm(x, p.n2, 1e-6)
    x = x + ops.swiglu(h @ p.wg, h @ p.wu) @ p.wd
    logits = ops.rms_norm(x, p.n3, 1e-6) @ p.lm
    return F.cross_entropy(logits.view(b * s, -1), targets.view(-1))


def main() -> int:
    if not torch.cuda.is_available():
        print("liger_ops: needs a CUDA GPU (Liger's kernels run through torch_tile's native CUDA path)")
        return 0
    try:
        references = register()
    except ImportError as e:
        print(f"liger_ops: needs liger-kernel ({e}); pip install --no-deps wheels/liger_kernel-0.8.5-py3-none-any.whl")
        return 1
    torch.manual_seed(0)
    p = make_params()
    tokens = torch.randint(0, p.emb.shape[0], (2, 64), device="cuda")
    targets = torch.randint(0, p.emb.shape[0], (2, 64), device="cuda")

    checked = {name: Checked(name, references[name]) for name in OPS}
    loss = forward(p, tokens, targets, types.SimpleNamespace(**checked))
    torch_loss = forward(p, tokens, targets, types.SimpleNamespace(**references))
    torch.cuda.synchronize()

    for name in OPS:
        print(f"torch.ops.liger.{name:<14} max |op - torch| = {checked[name].max_error:.3e}")
    reason, ce_error = cross_entropy_fallback(tokens.device)
    print(f"torch.ops.liger.cross_entropy falls back ({reason}); |op - torch| = {ce_error:.3e}")
    loss_error = abs(loss.item() - torch_loss.item())
    print(f"loss: ops {loss.item():.6f}  torch {torch_loss.item():.6f}  |difference| = {loss_error:.3e}")
    ok = loss_error < 1e-3 and ce_error < 1e-4 and all(c.max_error < 1e-3 for c in checked.values())
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
