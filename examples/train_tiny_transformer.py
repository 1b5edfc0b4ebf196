"""Trains a tiny decoder-only transformer whose fused pieces are tile ops.

    python examples/train_tiny_transformer.py [--steps 300] [--modes ...] [--json PATH]

The model (2 blocks, d=128, 4 heads, sequence 64, vocabulary 256) uses
``tile::rms_norm``, ``tile::softmax`` (attention probabilities),
``tile::swiglu`` and ``tile::cross_entropy``, each with a backward made of tile
ops; the matmuls are torch's. It learns a task made in the script: arithmetic
progressions modulo 256 with a random start and step, so the loss falls from
ln(256) = 5.5 towards 0. AdamW, fixed seeds, the same data in every mode.

Modes (each trains the same initial weights):
  torch            pure torch, eager
  torch_compiled   pure torch under torch.compile(mode="reduce-overhead")
  tile             tile ops, eager
  tile_compiled    tile ops under torch.compile(mode="reduce-overhead") (CUDA graphs)
  triton_op        the same Triton kernels through torch.library.triton_op
  liger            Liger-Kernel's fused pieces (the autograd.Functions that LigerRMSNorm,
                   LigerSwiGLUMLP and LigerCrossEntropyLoss apply, and LigerSoftmax's);
                   needs liger-kernel, skipped with a message without it

For each mode it prints the loss curve's agreement with pure torch eager and
the median step time. Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import types
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

import torch_tile as tt
from torch_tile import kernels as K

EPS = 1e-6


@dataclass(frozen=True)
class Config:
    vocab: int = 256
    dim: int = 128
    heads: int = 4
    layers: int = 2
    hidden: int = 384
    seq: int = 64
    batch: int = 16
    lr: float = 3e-3


@dataclass(frozen=True)
class FusedOps:
    """The four fused pieces of the model, in one implementation."""

    rms_norm: Callable  # (x (rows, dim), weight) -> normalised x
    softmax: Callable  # (scores (rows, cols)) -> probabilities over the last dim
    swiglu: Callable  # (gate, up) -> silu(gate) * up
    cross_entropy: Callable  # (logits (rows, vocab), target (rows,)) -> per-row loss


TORCH_OPS = FusedOps(
    rms_norm=lambda x, w: F.rms_norm(x, (x.shape[-1],), w, EPS),
    softmax=lambda s: torch.softmax(s, dim=-1),
    swiglu=lambda g, u: F.silu(g) * u,
    cross_entropy=lambda logits, target: F.cross_entropy(logits, target, reduction="none"),
)


def ops_of(ns) -> FusedOps:
    """The fused pieces as the ops of namespace ``ns`` (``torch.ops.tile`` or a mirror)."""
    return FusedOps(
        rms_norm=lambda x, w: ns.rms_norm(x, w, EPS)[0],
        softmax=ns.softmax,
        swiglu=ns.swiglu,
        cross_entropy=lambda logits, target: ns.cross_entropy(logits, target)[0],
    )


def triton_op_mirror(namespace: str = "tile_ref") -> types.SimpleNamespace:
    """The model's tile ops (forward and backward) registered again with
    ``torch.library.triton_op``, same bodies and same backward formulas, so the
    only difference is the launch path (Triton's Python launcher per call)."""
    from torch.library import register_autograd, triton_op

    forward = [K.rms_norm, K.softmax, K.swiglu, K.cross_entropy]
    backward = [K.rms_norm_backward, K.softmax_backward, K.swiglu_backward, K.cross_entropy_backward]
    mirrors = {}
    for op in forward + backward:
        mirrors[op.name] = triton_op(f"{namespace}::{op.name}", op.fn, mutates_args=())
    for op in forward:
        # The same backward function, calling the mirrored backward ops.
        fn = op.backward_fn
        rebound = {k: mirrors[v.name] for k, v in fn.__globals__.items() if isinstance(v, tt.TileOp)
                   and v.name in mirrors}
        backward_fn = types.FunctionType(fn.__code__, {**fn.__globals__, **rebound}, fn.__name__, fn.__defaults__,
                                         fn.__closure__)
        register_autograd(f"{namespace}::{op.name}", backward_fn, setup_context=op.setup_context_fn)
    return types.SimpleNamespace(**mirrors)


def liger_ops() -> FusedOps:
    """The fused pieces as Liger-Kernel computes them: the autograd.Functions its
    modules apply (LigerRMSNorm, LigerSoftmax, LigerSwiGLUMLP's SiLU-mul,
    LigerCrossEntropyLoss), with the arguments those modules pass for this model
    (float32 weights, no offset, per-row losses). ImportError without liger-kernel."""
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    return FusedOps(
        rms_norm=lambda x, w: LigerRMSNormFunction.apply(x, w, EPS, 0.0, "llama", True),
        softmax=LigerSoftmaxFunction.apply,
        swiglu=LigerSiLUMulFunction.apply,
        cross_entropy=lambda logits, target: LigerCrossEntropyFunction.apply(logits, target, None, -100, 0.0, 0.0,
                                                                             "none")[0],
    )


def liger_available() -> bool:
    try:
        liger_ops()
    except ImportError:
        return False
    return True


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.heads = cfg.heads
        self.norm1 = nn.Parameter(torch.ones(cfg.dim))
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=False)
        self.proj = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.norm2 = nn.Parameter(torch.ones(cfg.dim))
        self.gate = nn.Linear(cfg.dim, cfg.hidden, bias=False)
        self.up = nn.Linear(cfg.dim, cfg.hidden, bias=False)
        self.down = nn.Linear(cfg.hidden, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor, ops: FusedOps) -> torch.Tensor:
        b, t, d = x.shape
        hd = d // self.heads
        h = ops.rms_norm(x.reshape(b * t, d), self.norm1).view(b, t, d)
        q, k, v = self.qkv(h).view(b, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        p = ops.softmax(scores.reshape(-1, t)).view(b, self.heads, t, t)
        x = x + self.proj((p @ v).transpose(1, 2).reshape(b, t, d))
        h = ops.rms_norm(x.reshape(b * t, d), self.norm2).view(b, t, d)
        return x + self.down(ops.swiglu(self.gate(h), self.up(h)))


class TinyTransformer(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.pos = nn.Parameter(torch.randn(cfg.seq, cfg.dim) * 0.02)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = nn.Parameter(torch.ones(cfg.dim))
        self.head = nn.Linear(cfg.dim, cfg.vocab, bias=False)

    def forward(self, tokens: torch.Tensor, ops: FusedOps) -> torch.Tensor:
        return self.loss(tokens, ops)

    def loss(self, tokens: torch.Tensor, ops: FusedOps) -> torch.Tensor:
        """Mean next-token cross-entropy of (batch, seq + 1) tokens."""
        inputs, target = tokens[:, :-1], tokens[:, 1:]
        b, t = inputs.shape
        x = self.embed(inputs) + self.pos[:t]
        for block in self.blocks:
            x = block(x, ops)
        logits = self.head(ops.rms_norm(x.reshape(b * t, -1), self.norm))
        return ops.cross_entropy(logits, target.reshape(-1)).mean()


def progression_batch(cfg: Config, generator: torch.Generator, device) -> torch.Tensor:
    """(batch, seq + 1) tokens: arithmetic progressions modulo the vocabulary
    with a random start and a random step in 1..4 (so the next token follows
    from the previous two: the model has to attend)."""
    start = torch.randint(0, cfg.vocab, (cfg.batch, 1), generator=generator, device=device)
    step = torch.randint(1, 5, (cfg.batch, 1), generator=generator, device=device)
    return (start + step * torch.arange(cfg.seq + 1, device=device)) % cfg.vocab


class Trainer:
    """One mode's model, optimizer and data stream (same seed in every mode)."""

    def __init__(self, mode: str, cfg: Config = Config(), seed: int = 0, device="cuda",
                 mirror: types.SimpleNamespace | None = None):
        torch.manual_seed(seed)
        self.cfg, self.device, self.mode = cfg, device, mode
        self.model = TinyTransformer(cfg).to(device)
        ops = {"torch": TORCH_OPS, "torch_compiled": TORCH_OPS, "tile": ops_of(torch.ops.tile),
               "tile_compiled": ops_of(torch.ops.tile)}.get(mode)
        if mode == "triton_op":
            ops = ops_of(mirror or triton_op_mirror())
        elif mode == "liger":
            ops = liger_ops()
        if ops is None:
            raise ValueError(f"unknown mode {mode!r}")
        self.loss_fn = lambda tokens: self.model.loss(tokens, ops)
        if mode.endswith("_compiled"):
            self.loss_fn = torch.compile(self.loss_fn, mode="reduce-overhead", fullgraph=True)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, fused=True)
        self.data = torch.Generator(device=device).manual_seed(seed + 1)
        self.sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
        self.losses: list[float] = []
        self.times: list[float] = []

    def step(self) -> None:
        tokens = progression_batch(self.cfg, self.data, self.device)
        self.sync()
        start = time.perf_counter()
        if self.mode.endswith("_compiled"):
            torch.compiler.cudagraph_mark_step_begin()  # one training step per CUDA-graph generation
        loss = self.loss_fn(tokens)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.sync()
        self.times.append(time.perf_counter() - start)
        self.losses.append(loss.item())

    def result(self) -> dict:
        warm = self.times[min(10, len(self.times) // 2):]
        return {"losses": self.losses, "step_ms": statistics.median(warm) * 1e3,
                "loss_first_last": [self.losses[0], self.losses[-1]]}


def train(mode: str, steps: int, cfg: Config = Config(), seed: int = 0, device="cuda",
          mirror: types.SimpleNamespace | None = None) -> dict:
    """Trains from the same seed in ``mode``; returns losses and step times."""
    return train_interleaved([mode], steps, cfg, seed, device, mirror)[mode]


def train_interleaved(modes, steps: int, cfg: Config = Config(), seed: int = 0, device="cuda",
                      mirror: types.SimpleNamespace | None = None) -> dict:
    """Trains every mode from the same seed, one step of each in turn, so that
    a slow spell of the machine hits all modes alike; returns each mode's
    losses and median step time."""
    trainers = {mode: Trainer(mode, cfg, seed, device, mirror) for mode in modes}
    for _ in range(steps):
        for trainer in trainers.values():
            trainer.step()
    return {mode: t.result() for mode, t in trainers.items()}


def agreement(losses: list, reference: list) -> float:
    """Largest absolute difference between two loss curves."""
    return max(abs(a - b) for a, b in zip(losses, reference))


MODES = ("torch", "torch_compiled", "tile", "tile_compiled", "triton_op", "liger")


def available_modes(modes) -> list:
    """``modes`` less ``liger`` when liger-kernel is not installed (said once on stderr)."""
    if "liger" in modes and not liger_available():
        print("train_tiny_transformer: liger-kernel is not installed: the liger mode is skipped", file=sys.stderr)
        return [m for m in modes if m != "liger"]
    return list(modes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("train_tiny_transformer: needs a CUDA GPU")
        return 0
    results = train_interleaved(available_modes(args.modes), args.steps)
    reference = results.get("torch", {}).get("losses")
    for mode, r in results.items():
        line = f"{mode:15s} step {r['step_ms']:7.2f} ms  loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}"
        if reference is not None:
            r["max_abs_loss_diff_vs_torch"] = agreement(r["losses"], reference)
            line += f"  max |loss - torch| {r['max_abs_loss_diff_vs_torch']:.2e}"
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
