"""A model whose graph calls tile ops, packaged with AOTInductor, for
examples/cpp/aoti_main.cpp (a LibTorch program with no Python) and the tests.

    python examples/cpp/aoti_model.py OUT_DIR           # package
    python examples/cpp/aoti_model.py OUT_DIR --load    # run the package in Python

On the lent H200 image, loading any AOTInductor package in Python needs the
system's libstdc++ preloaded (README, "AOTInductor"):
    LD_PRELOAD=$(g++ -print-file-name=libstdc++.so.6) python ... --load

writes into OUT_DIR:
  model.pt2   torch._inductor.aoti_compile_and_package of the exported model;
              the tile ops stay in the graph and the package's C++ calls them
              through the dispatcher (AOTInductor's proxy executor)
  ops.ttb     a bundle of the tile ops the program calls, prepared for the model's calls
  x.pt, y.pt  the input and the eager output (torch.save, CPU tensors; C++
              reads them with torch::pickle_load)

On the GPU the model runs on CUDA; without one it is packaged for the CPU (the
package then loads and its call of a tile op reaches the dispatcher, which
refuses CPU tensors: tile ops have CUDA kernels only).
"""

from __future__ import annotations

import os
import sys

import torch
import torch._inductor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops  # noqa: E402, F401  (defines tile::add, demo::scaled_softmax, demo::scale_rows)

import torch_tile as tt  # noqa: E402


class TileModel(torch.nn.Module):
    """linear -> softmax * 2 (two kernels, one autotuned) -> + x."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = torch.ops.demo.scaled_softmax(self.linear(x), 2.0)
        return torch.ops.tile.add(probs, x)


def package(out_dir: str) -> dict:
    """Exports the model and its ops' bundle into ``out_dir``; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = TileModel().to(device).eval()
    x = torch.randn(8, 64, device=device)
    with torch.no_grad():
        expected = model(x) if device == "cuda" else None
        program = torch.export.export(model, (x,))
        pt2 = torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(out_dir, "model.pt2"))
    h = torch.randn(8, 64, device="cpu")  # stands for the linear's output: same shape, dtype and layout
    examples = {"demo::scaled_softmax": [(h.to(device), 2.0)], "tile::add": [(h.to(device), x)]}
    bundle = os.path.join(out_dir, "ops.ttb")
    tt.export_bundle(program, bundle, examples=examples, capabilities=None if device == "cuda" else [90])
    torch.save(x.cpu(), os.path.join(out_dir, "x.pt"))
    if expected is not None:
        torch.save(expected.cpu(), os.path.join(out_dir, "y.pt"))
    return {"package": pt2, "bundle": bundle, "device": device}


def load_and_run(out_dir: str) -> float:
    """Runs ``out_dir``'s package with ``aoti_load_package`` in this process (the ops are defined by the
    import of ops.py); returns max |output - eager|, AssertionError if they differ."""
    runner = torch._inductor.aoti_load_package(os.path.join(out_dir, "model.pt2"))
    x = torch.load(os.path.join(out_dir, "x.pt")).cuda()
    got = runner(x)
    got = (got[0] if isinstance(got, (list, tuple)) else got).cpu()
    expected = torch.load(os.path.join(out_dir, "y.pt"))
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    return (got - expected).abs().max().item()


if __name__ == "__main__":
    if "--load" in sys.argv[2:]:
        print(f"aoti_load_package: same as eager (max |diff| {load_and_run(sys.argv[1]):.3g})")
    else:
        print(package(sys.argv[1]))
