"""Training with the autograd.Functions a library already has: Liger-Kernel's ``LigerRMSNormFunction`` and
``LigerSiLUMulFunction``, unchanged, called in tile op bodies.

    python examples/liger_functions.py [--steps N]

A decoder-style stack (layers of RMSNorm, a gated SiLU MLP and residuals) in four ways that compute the same
thing:

* ``liger``: the library's Functions applied directly (its own Python wrappers per call);
* ``liger_tile``: the same Functions applied in ``torch_tile.op`` bodies (``torch.ops.liger_fn.rms_norm``,
  ``.silu_mul``): each op's forward is a native plan of the Function's forward, its gradient a native plan of the
  Function's own backward (one C++ autograd node per call);
* ``tile``: torch_tile's own ``tile::rms_norm`` and ``tile::swiglu`` with their registered backwards;
* ``torch``: plain torch.

The script trains each from the same initial weights and prints the losses; ``liger`` and ``liger_tile`` run the
same kernels, so their losses and gradients are equal bit for bit. Needs a CUDA GPU and liger-kernel.
"""

from __future__ import annotations

import argparse
import copy
import sys

import torch
import torch.nn.functional as F

import torch_tile as tt

MODES = ("torch", "liger", "liger_tile", "tile")
EPS = 1e-6


def _liger():
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    return LigerRMSNormFunction, LigerSiLUMulFunction


def define_ops() -> None:
    """``torch.ops.liger_fn.rms_norm`` and ``.silu_mul``: the Functions, unchanged, in op bodies."""
    if hasattr(torch.ops.liger_fn, "rms_norm"):
        return
    rms_norm_function, silu_mul_function = _liger()

    @tt.op("liger_fn::rms_norm")
    def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        return rms_norm_function.apply(x, weight, eps, 0.0, "llama", False)

    @tt.op("liger_fn::silu_mul")
    def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return silu_mul_function.apply(gate, up)


def pieces(mode: str):
    """(rms_norm(x, w), silu_mul(gate, up)) of ``mode``."""
    if mode == "torch":
        return (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w,
                lambda g, u: F.silu(g) * u)
    if mode == "liger":
        rms_norm_function, silu_mul_function = _liger()
        return (lambda x, w: rms_norm_function.apply(x, w, EPS, 0.0, "llama", False),
                lambda g, u: silu_mul_function.apply(g, u))
    if mode == "liger_tile":
        define_ops()
        return (lambda x, w: torch.ops.liger_fn.rms_norm(x, w, EPS), torch.ops.liger_fn.silu_mul)
    if mode == "tile":
        import torch_tile.kernels  # noqa: F401 - defines tile::rms_norm and tile::swiglu
        return (lambda x, w: torch.ops.tile.rms_norm(x, w, EPS)[0], torch.ops.tile.swiglu)
    raise ValueError(f"unknown mode {mode!r}; one of {MODES}")


class Block(torch.nn.Module):
    """Layers of ``x + down(silu_mul(gate(norm(x)), up(norm(x))))``, then a final norm."""

    def __init__(self, dim: int = 256, hidden: int = 512, layers: int = 4):
        super().__init__()
        self.norms = torch.nn.ParameterList(torch.nn.Parameter(1 + 0.1 * torch.randn(dim)) for _ in range(layers + 1))
        self.gates = torch.nn.ModuleList(torch.nn.Linear(dim, hidden, bias=False) for _ in range(layers))
        self.ups = torch.nn.ModuleList(torch.nn.Linear(dim, hidden, bias=False) for _ in range(layers))
        self.downs = torch.nn.ModuleList(torch.nn.Linear(hidden, dim, bias=False) for _ in range(layers))
        self.mode = "torch"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms_norm, silu_mul = pieces(self.mode)
        for norm, gate, up, down in zip(self.norms, self.gates, self.ups, self.downs):
            h = rms_norm(x, norm)
            x = x + down(silu_mul(gate(h), up(h)))
        return rms_norm(x, self.norms[-1])


def loss_of(model: Block, x: torch.Tensor) -> torch.Tensor:
    return model(x).float().pow(2).mean()


def models(modes=MODES, seed: int = 0, device: str = "cuda", **sizes) -> dict:
    """One Block per mode, from the same initial weights."""
    torch.manual_seed(seed)
    base = Block(**sizes).to(device)
    out = {}
    for mode in modes:
        model = copy.deepcopy(base)
        model.mode = mode
        out[mode] = model
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("liger_functions: needs a CUDA GPU")
        return 0
    runs = models()
    x = torch.randn(512, 256, device="cuda")
    losses = {mode: [] for mode in runs}
    for mode, model in runs.items():
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(args.steps):
            optimizer.zero_grad()
            loss = loss_of(model, x)
            loss.backward()
            optimizer.step()
            losses[mode].append(loss.item())
    for mode, values in losses.items():
        print(f"{mode:11s} loss {values[0]:.6f} -> {values[-1]:.6f}")
    same = losses["liger"] == losses["liger_tile"]
    print(f"liger_tile's losses equal liger's bit for bit: {same}")
    print("fallback calls:", tt.runtime_counters()["fallback_calls"])
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
