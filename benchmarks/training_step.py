"""Training step time of the tiny transformer (examples/train_tiny_transformer.py)
in six ways, the per-kernel replay cost of tile ops in a CUDA graph, and a block
built from a library's autograd.Functions (benchmarks/_library_functions.py).

    python benchmarks/training_step.py [--steps N] [--out DIR]

Rows (median ms per step after warm-up, one process, one run; the five
models train side by side, one step of each in turn): pure torch
eager; pure torch under torch.compile(mode="reduce-overhead"); the tile model
eager; the tile model under torch.compile(mode="reduce-overhead") (CUDA
graphs); the same Triton kernels through torch.library.triton_op, eager;
Liger-Kernel's fused pieces, eager (when liger-kernel is installed).
Replay: a CUDA graph of 256 ``torch.ops.tile.add`` calls against a graph of
256 bare launches of the same kernel (Triton's launcher into preallocated
outputs: the graph floor), µs per kernel per replay. Also printed and kept:
backward() of a one-node graph into one leaf (the engine's start and one
gradient accumulation, inside every forward+backward row) and the runtime's slow-path counters per eager tile
step. Writes
training_step.json and training_step.png to --out.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

from train_tiny_transformer import (MODES, TORCH_OPS, Config, FusedOps, Trainer, agreement,  # noqa: E402
                                    available_modes, liger_available, liger_ops, ops_of, train,
                                    train_interleaved, triton_op_mirror)

from _library_functions import library_functions, print_rows  # noqa: E402
from _report import write  # noqa: E402
from _timing import host_us, replay_us  # noqa: E402
from torch_tile import kernels as K  # noqa: E402

GRAPH_KERNELS = 256


def _replay_us_per_kernel(graph: torch.cuda.CUDAGraph) -> float:
    return replay_us(graph) / GRAPH_KERNELS


def graph_replay() -> dict:
    """µs per kernel when replaying a graph of tile.add calls vs bare launches."""
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")
    outs = [torch.empty_like(x) for _ in range(GRAPH_KERNELS)]
    grid = (triton.cdiv(x.numel(), 1024),)

    def tile_calls():
        return [torch.ops.tile.add(x, y) for _ in range(GRAPH_KERNELS)]

    def bare_launches():
        for out in outs:
            K.add_kernel[grid](x, y, out, x.numel(), BLOCK=1024)

    graphs = {}
    for name, body in (("tile ops", tile_calls), ("bare launches (floor)", bare_launches)):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            body()  # warm: compiled and loaded before capture
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            kept = body()
        graphs[name] = (g, kept)
    samples = {name: [] for name in graphs}
    for _ in range(5):
        for name, (g, _) in graphs.items():
            samples[name].append(_replay_us_per_kernel(g))
    return {name: statistics.median(v) for name, v in samples.items()}


# The fused pieces at no cost (shape-keeping stand-ins): what no implementation of them can beat.
FREE_PIECES = FusedOps(rms_norm=lambda x, w: x, softmax=lambda s: s, swiglu=lambda g, u: g,
                       cross_entropy=lambda logits, target: logits[:, 0])


def free_pieces_over_torch(steps: int) -> float:
    """Step time of the model with free fused pieces over its pure-torch step,
    interleaved step by step: the smallest tile/torch step ratio any fused
    implementation could reach (the rest of the step is torch's either way)."""
    torch_run, free_run = Trainer("torch"), Trainer("torch")
    free_run.loss_fn = lambda tokens: free_run.model.loss(tokens, FREE_PIECES)
    for _ in range(steps):
        torch_run.step()
        free_run.step()
    return free_run.result()["step_ms"] / torch_run.result()["step_ms"]


def fused_op_costs(mirror, modes, cfg: Config = Config()) -> dict:
    """µs per call of each fused piece of the model at its training shape, per
    implementation: forward without grad, forward with grad, forward+backward.
    Explains the eager step table op by op."""
    rows, dim = cfg.batch * cfg.seq, cfg.dim
    scores = cfg.batch * cfg.heads * cfg.seq
    impls = {"torch": TORCH_OPS, "tile": ops_of(torch.ops.tile), "triton_op": ops_of(mirror)}
    if "liger" in modes:
        impls["liger"] = liger_ops()

    def inputs():
        return {
            "rms_norm": (torch.randn(rows, dim, device="cuda"), torch.ones(dim, device="cuda")),
            "softmax": (torch.randn(scores, cfg.seq, device="cuda"),),
            "swiglu": (torch.randn(rows, cfg.hidden, device="cuda"), torch.randn(rows, cfg.hidden, device="cuda")),
            "cross_entropy": (torch.randn(rows, cfg.vocab, device="cuda"),
                              torch.randint(0, cfg.vocab, (rows,), device="cuda")),
        }

    costs: dict = {}
    for impl, ops in impls.items():
        for name, args in inputs().items():
            fn = getattr(ops, name)
            grads = tuple(a.detach().requires_grad_() if a.is_floating_point() else a for a in args)
            out = fn(*grads)
            seed = torch.ones_like(out)

            def forward_backward(fn=fn, grads=grads, seed=seed):
                fn(*grads).backward(seed)

            costs[f"{name} {impl}"] = {
                "forward_no_grad": host_us(lambda fn=fn, args=args: fn(*args)),
                "forward_grad": host_us(lambda fn=fn, grads=grads: fn(*grads)),
                "forward_backward": host_us(forward_backward),
            }
    return costs


def backward_baseline_us() -> float:
    """µs of ``backward()`` through a one-node graph (a view of a leaf): the
    engine's start and one accumulation into the leaf's ``.grad``, both inside
    every ``forward_backward`` row (which accumulates once per input)."""
    x = torch.randn(1024, 128, device="cuda", requires_grad=True)
    seed = torch.ones_like(x)
    return host_us(lambda: x.view_as(x).backward(seed))


def tile_steady_state_per_step(steps: int = 10) -> dict:
    """The runtime's slow-path counters per eager tile training step after
    warm-up (tt.runtime_counters()): traces, compiles and host entries should
    be 0; plan_scans counts calls whose op's last selected plan did not serve
    them, map_lookups inline-cache misses."""
    import torch_tile as tt

    run = Trainer("tile")
    for _ in range(5):
        run.step()
    before = tt.runtime_counters()
    for _ in range(steps):
        run.step()
    after = tt.runtime_counters()
    return {name: (after[name] - before[name]) / steps for name in after}


def profile(mode: str, mirror, steps: int = 6) -> None:
    """Prints where a step's host and GPU time go in ``mode`` (torch.profiler)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    train(mode, 3, mirror=mirror)  # warm
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        train(mode, steps, mirror=mirror)
    print(f"--- profile of {steps} steps, mode {mode} ---")
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=25, max_name_column_width=60))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    parser.add_argument("--profile", nargs="*", default=[], choices=MODES, help="also print a profile of these modes")
    parser.add_argument("--library-only", action="store_true",
                        help="only the rows of the block built from Liger-Kernel's autograd.Functions")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("training_step: needs a CUDA GPU")
        return 0
    os.makedirs(args.out, exist_ok=True)
    library = library_functions(args.steps) if liger_available() else None
    if library is not None:
        print_rows(library)
    if args.library_only:
        write(args.out, "training_step_library", {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                                  "triton": triton.__version__, **(library or {})},
              library["step_ms"] if library else {}, unit="ms", highlight="liger_tile",
              xlabel="ms per training step (median)", title="Liger-Kernel's Functions: training step")
        return 0
    mirror = triton_op_mirror()
    modes = available_modes(MODES)
    runs = train_interleaved(modes, args.steps, mirror=mirror)
    step_ms = {mode: r["step_ms"] for mode, r in runs.items()}
    floor_ratio = free_pieces_over_torch(args.steps)
    replay = graph_replay()
    floor = replay["bare launches (floor)"]
    op_costs = fused_op_costs(mirror, modes)
    baseline = backward_baseline_us()
    counters = tile_steady_state_per_step()
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "steps": args.steps,
        "step_ms": step_ms,
        "max_abs_loss_diff_vs_torch": {m: agreement(r["losses"], runs["torch"]["losses"]) for m, r in runs.items()},
        "loss_first_last": {m: r["loss_first_last"] for m, r in runs.items()},
        "graph_replay_us_per_kernel": replay,
        "fused_op_host_us": op_costs,
        "backward_baseline_us": baseline,
        "tile_counters_per_step": counters,
        "library_functions": library,
        "ratios": {
            "tile_eager_over_torch_eager": step_ms["tile"] / step_ms["torch"],
            "triton_op_over_tile_eager": step_ms["triton_op"] / step_ms["tile"],
            "tile_compiled_over_torch_compiled": step_ms["tile_compiled"] / step_ms["torch_compiled"],
            "tile_replay_over_floor": replay["tile ops"] / floor,
            "free_pieces_over_torch_eager": floor_ratio,
            # Of the step time that fused pieces can save at most, the part tile ops save.
            "tile_share_of_possible_saving":
                (step_ms["torch"] - step_ms["tile"]) / (step_ms["torch"] * (1 - floor_ratio)),
        },
    }
    ratios = result["ratios"]
    if "liger" in step_ms:
        ratios["liger_over_tile_eager"] = step_ms["liger"] / step_ms["tile"]
    tile_ops = {name.split()[0]: c for name, c in op_costs.items() if name.endswith(" tile")}
    worst_grad = max(c["forward_grad"] / c["forward_no_grad"] for c in tile_ops.values())
    ratios["tile_forward_grad_over_no_grad_worst"] = worst_grad
    result["targets_met"] = {
        "tile eager <= 0.85x torch eager": ratios["tile_eager_over_torch_eager"] <= 0.85,
        "tile eager >= 1.3x faster than liger": ratios.get("liger_over_tile_eager", 0.0) >= 1.3,
        "tile eager >= 1.5x faster than triton_op": ratios["triton_op_over_tile_eager"] >= 1.5,
        "tile forward with grad <= 1.3x without, every op": worst_grad <= 1.3,
        "tile forward+backward <= torch's, every op": all(
            c["forward_backward"] <= op_costs[f"{name} torch"]["forward_backward"] for name, c in tile_ops.items()),
        "tile compiled <= torch compiled (reduce-overhead)": ratios["tile_compiled_over_torch_compiled"] <= 1.0,
        "graph replay per kernel within 10% of floor": ratios["tile_replay_over_floor"] <= 1.10,
    }
    for mode, ms in step_ms.items():
        print(f"{mode:15s} {ms:8.2f} ms/step   max |loss - torch| {result['max_abs_loss_diff_vs_torch'][mode]:.2e}")
    for name, us in replay.items():
        print(f"graph replay, {name:22s} {us:6.3f} µs/kernel")
    print(f"{'fused op, host µs per call':28s} {'fwd no grad':>12s} {'fwd grad':>10s} {'fwd+bwd':>10s}")
    for name, c in op_costs.items():
        print(f"{name:28s} {c['forward_no_grad']:12.1f} {c['forward_grad']:10.1f} {c['forward_backward']:10.1f}")
    print(f"backward() of a one-node graph into one leaf (engine start + one accumulation): {baseline:.1f} µs")
    print("tile eager step, runtime counters per step: " + ", ".join(f"{k} {v:g}" for k, v in counters.items()))
    for name, value in result["ratios"].items():
        print(f"{name:36s} {value:6.2f}")
    for name, ok in result["targets_met"].items():
        print(f"target {name}: {'met' if ok else 'NOT met'}")
    for mode in args.profile:
        profile(mode, mirror)
    write(args.out, "training_step", result, step_ms, unit="ms", highlight="tile",
          xlabel="ms per training step (median)", title=f"Tiny transformer training step on {result['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
