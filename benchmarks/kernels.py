"""GPU time of the example kernels three ways, and the host cost of tensor
descriptors, in one process and one run.

    python benchmarks/kernels.py [--out DIR] [--quick]

Part 1, GPU µs per call of each example kernel through torch_tile
(``torch.ops.tile.*``), through Triton's own launcher (``kernel[grid](...)``
with the arguments, meta-parameters and options the op body passes, outputs
allocated as the body allocates them) and through the torch equivalent:

* ``tile::matmul_tma`` (bf16, 4096^3, autotuned: the first call tunes; the
  Triton row launches the config torch_tile chose, read from its plan, with
  real ``TensorDescriptor``s built per call) against ``torch.matmul`` (cuBLAS);
* ``tile::layer_norm_pdl`` (bf16 8192x4096; two launches, the second with
  ``launch_pdl=True``) against ``F.layer_norm``;
* ``tile::sum_cooperative`` (2**26 fp32; one ``launch_cooperative_grid=True``
  launch) against ``torch.sum``.

Each sample is CUDA events around a loop of calls on the current stream (L2 not
flushed, after warm-up). The loop is queued behind a ``torch.cuda._sleep`` long
enough for the host to enqueue the whole loop, so the events see the kernels
back to back and not the host's launch cost (Triton's launcher would otherwise
dominate the small kernels). Rows take turns within each round; the median over
rounds is reported. Before timing, each kernel's output is checked against
torch and against Triton's launch of the same kernel, and torch_tile's binary
(the cubin its compile callback returns for the plan's launches) is compared
with the one Triton's launcher ran.

Part 2, host µs per call of a 64x64 fp16 ``c = a + b`` (one program) with three
TMA descriptors against plain pointers, through torch_tile and through Triton
(which builds the three ``TensorDescriptor``s per call, as a user would): host
wall time of a loop of calls (GPU idle before, drained after the clock stops),
best of several interleaved rounds. ``descriptor_overhead_us`` is the
descriptor row minus the pointer row.

Writes kernels.json and kernels.png to --out. ``--quick``: small sizes and few
iterations (a smoke run; the targets are still evaluated but mean little).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import torch_tile as tt
from torch_tile.frontends.triton import compile as triton_compile, kernels as triton_kernels
from torch_tile import kernels as K
from torch_tile.demo import host_seconds
from torch_tile.kernels import _common
from torch_tile import _testing

try:  # the launch-attribute kernels (rows left out where they are missing)
    from torch_tile.kernels import cooperative_sum, pdl_layer_norm
except ImportError:
    cooperative_sum = pdl_layer_norm = None

from _report import write
from _timing import interleaved_us

# Sizes and loop lengths. GPU loops stay well under the launch queue's depth, so
# the host never blocks on it while the GPU sleeps.
FULL = {"matmul": 4096, "ln_rows": 8192, "ln_cols": 4096, "sum_n": 1 << 26, "gpu_rounds": 20,
        "gpu_iters": {"matmul_tma": 20, "layer_norm_pdl": 100, "sum_cooperative": 64},
        "host_iters": 5000, "host_rounds": 15}
QUICK = {"matmul": 1024, "ln_rows": 1024, "ln_cols": 1024, "sum_n": 1 << 20, "gpu_rounds": 3,
         "gpu_iters": {"matmul_tma": 10, "layer_norm_pdl": 20, "sum_cooperative": 20},
         "host_iters": 500, "host_rounds": 3}

BF16_TOL = {"atol": 1e-2, "rtol": 1.6e-2}
TINY = 64  # the host-overhead ops: one 64x64 fp16 tile, one program
DEVICE = "cuda"


# -- part 1: GPU time ---------------------------------------------------------------------------------


def _launched(compiled):
    """The CompiledKernel ``kernel[grid](...)`` returned (a future under async compilation)."""
    return compiled.result() if hasattr(compiled, "result") else compiled


def chosen_matmul_launch(a: torch.Tensor, b: torch.Tensor) -> dict:
    """The launch torch_tile makes for ``matmul_tma(a, b)``: the autotune config
    it chose (meta-parameters and options), NUM_SMS, and the descriptors' block
    shapes, read from the plan. After a CUDA call the choice is cached, so this
    trace does not tune again (on CPU tensors it is the first config)."""
    plan = K.matmul_tma.trace(a, b)
    (step,) = plan.launches
    launch = triton_kernels.launch_config(step.config)
    blocks = {name: list(v[1]) for name, v in launch.statics.items() if name.endswith("_desc")}
    meta = {name: v for name, v in launch.statics.items() if name not in blocks}
    config = next((c for c in K.matmul_tma_kernel.configs if c.all_kwargs() == {
        **{k: meta[k] for k in c.kwargs if k in meta}, **launch.options}), None)
    if config is None:
        raise RuntimeError(f"matmul_tma: the plan's launch {meta} {launch.options} is none of the autotune configs")
    bm, bn, bk = (config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    if blocks != {"a_desc": [bm, bk], "b_desc": [bk, bn], "c_desc": [bm, bn]}:
        raise RuntimeError(f"matmul_tma: the plan's descriptor blocks {blocks} are not those of {config}")
    return {"kwargs": {**config.all_kwargs(), "NUM_SMS": meta["NUM_SMS"]}, "block_shapes": blocks,
            "config": str(config)}


def triton_matmul_tma(a, b, launch: dict, record: list | None = None):
    """``tile::matmul_tma``'s body through Triton's launcher with the chosen config."""
    kw = launch["kwargs"]
    M, Kd = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    blocks = launch["block_shapes"]
    a_desc = TensorDescriptor(a, [M, Kd], [a.stride(0), a.stride(1)], blocks["a_desc"])
    b_desc = TensorDescriptor(b, [Kd, N], [b.stride(0), b.stride(1)], blocks["b_desc"])
    c_desc = TensorDescriptor(c, [M, N], [c.stride(0), c.stride(1)], blocks["c_desc"])
    grid = (min(kw["NUM_SMS"], triton.cdiv(M, kw["BLOCK_M"]) * triton.cdiv(N, kw["BLOCK_N"])),)
    k = K.matmul_tma_kernel.fn[grid](a_desc, b_desc, c_desc, M, N, Kd, **kw)
    if record is not None:
        record.append(_launched(k))
    return c


def triton_layer_norm_pdl(x, weight, bias, eps: float, record: list | None = None):
    """``tile::layer_norm_pdl``'s body (CUDA path) through Triton's launcher."""
    P = pdl_layer_norm
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    stats = torch.empty((2, n_rows), dtype=_common.stats_dtype(x.dtype), device=x.device)
    BLOCK = triton.next_power_of_2(n_cols)
    num_warps = _common.row_warps(BLOCK)
    acc = _common.acc_dtype(x.dtype)
    k1 = P.layer_norm_stats_kernel[(n_rows,)](x, stats, x.stride(0), n_rows, n_cols, eps, BLOCK=BLOCK, ACC=acc,
                                              USE_GDC=True, num_warps=num_warps)
    k2 = P.layer_norm_apply_kernel[(n_rows,)](out, x, weight, bias, stats, x.stride(0), out.stride(0),
                                              weight.stride(0), bias.stride(0), n_rows, n_cols, BLOCK=BLOCK, ACC=acc,
                                              USE_GDC=True, num_warps=num_warps, launch_pdl=True)
    if record is not None:
        record += [_launched(k1), _launched(k2)]
    return out


def triton_sum_cooperative(x, record: list | None = None):
    """``tile::sum_cooperative``'s body (CUDA path) through Triton's launcher."""
    S = cooperative_sum
    n = x.numel()
    out = torch.zeros((), dtype=x.dtype, device=x.device)
    programs = min(S.sm_count(x.device), S.MAX_PROGRAMS)
    grid = min(triton.cdiv(n, S.BLOCK), programs)
    partials = torch.empty((programs,), dtype=_common.stats_dtype(x.dtype), device=x.device)
    counter = torch.zeros((1,), dtype=torch.int32, device=x.device)
    k = S.sum_cooperative_kernel[(grid,)](x, partials, counter, out, n, BLOCK=S.BLOCK, MAX_PROGRAMS=S.MAX_PROGRAMS,
                                          ACC=_common.acc_dtype(x.dtype), GRID_SYNC=True, num_warps=4,
                                          launch_cooperative_grid=True)
    if record is not None:
        record.append(_launched(k))
    return out


def _cases(sizes: dict) -> list[dict]:
    """One entry per kernel: its op and inputs, the three paths, the tolerance
    against torch, FLOPs (matmul) and the loop length."""
    cases = []
    dev = DEVICE
    n = sizes["matmul"]
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    torch.ops.tile.matmul_tma(a, b)  # the first call of a shape tunes
    torch.cuda.synchronize()
    launch = chosen_matmul_launch(a, b)
    cases.append({
        "name": "matmul_tma", "what": f"{n}x{n}x{n} bf16", "op": K.matmul_tma, "args": (a, b),
        "paths": {"torch_tile": lambda: torch.ops.tile.matmul_tma(a, b),
                  "Triton": lambda record=None: triton_matmul_tma(a, b, launch, record),
                  "torch": lambda: torch.matmul(a, b)},
        "tol": {"atol": 0.5, "rtol": 2e-2},  # K=4096 sums of randn products (|c| ~ 64), rounded to bf16
        "flops": 2 * n ** 3, "chosen": launch,
    })
    if pdl_layer_norm is not None and hasattr(torch.ops.tile, "layer_norm_pdl"):
        rows, cols = sizes["ln_rows"], sizes["ln_cols"]
        x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16) * 3 + 1
        w = torch.randn(cols, device=dev, dtype=torch.bfloat16)
        bias = torch.randn(cols, device=dev, dtype=torch.bfloat16)
        eps = 1e-5
        cases.append({
            "name": "layer_norm_pdl", "what": f"{rows}x{cols} bf16", "op": pdl_layer_norm.layer_norm_pdl,
            "args": (x, w, bias, eps),
            "paths": {"torch_tile": lambda: torch.ops.tile.layer_norm_pdl(x, w, bias, eps),
                      "Triton": lambda record=None: triton_layer_norm_pdl(x, w, bias, eps, record),
                      "torch": lambda: F.layer_norm(x, (cols,), w, bias, eps)},
            "tol": BF16_TOL,
        })
    if cooperative_sum is not None and hasattr(torch.ops.tile, "sum_cooperative"):
        xs = torch.rand(sizes["sum_n"], device=dev)  # positive: the tolerance is relative to a large sum
        cases.append({
            "name": "sum_cooperative", "what": f"{sizes['sum_n']} fp32", "op": cooperative_sum.sum_cooperative,
            "args": (xs,),
            "paths": {"torch_tile": lambda: torch.ops.tile.sum_cooperative(xs),
                      "Triton": lambda record=None: triton_sum_cooperative(xs, record),
                      "torch": lambda: torch.sum(xs)},
            "tol": {"atol": 1e-3, "rtol": 1e-5},
        })
    for case in cases:
        case["iters"] = sizes["gpu_iters"][case["name"]]
    return cases


def torch_tile_cubins(op, args: tuple) -> list[bytes]:
    """The cubins torch_tile launches for ``op(*args)``, one per launch of its plan."""
    plan = op.trace(*args)
    keys = _testing.specialization_keys(plan, args)
    major, minor = torch.cuda.get_device_capability()
    return [triton_compile._compile_callback(step.kernel, words, major * 10 + minor)["cubin"]
            for step, words in zip(plan.launches, keys)]


def check(case: dict) -> dict:
    """torch_tile's output against torch's and against Triton's launch of the same
    kernel, and torch_tile's binaries against those Triton's launcher ran."""
    paths = case["paths"]
    tile_out = paths["torch_tile"]()
    compiled = []
    triton_out = paths["Triton"](record=compiled)
    torch_out = paths["torch"]()
    torch.cuda.synchronize()
    result = {"matches_torch": True, "max_abs_err_vs_torch": (tile_out.float() - torch_out.float()).abs().max().item()}
    try:
        torch.testing.assert_close(tile_out.float(), torch_out.float(), **case["tol"])
    except AssertionError as e:
        result["matches_torch"] = False
        result["error"] = str(e).strip().splitlines()[0]
    result["same_output_as_triton"] = torch.equal(tile_out, triton_out)
    cubins = torch_tile_cubins(case["op"], case["args"])
    result["same_cubin_as_triton"] = len(cubins) == len(compiled) and all(
        c == k.asm["cubin"] for c, k in zip(cubins, compiled))
    return result


def _sleep_cycles_per_second() -> float:
    """Clock cycles of ``torch.cuda._sleep`` per second on this GPU (measured)."""
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cycles = 50_000_000
    start.record()
    torch.cuda._sleep(cycles)
    stop.record()
    stop.synchronize()
    return cycles / (start.elapsed_time(stop) * 1e-3)


def _gpu_sample(fn, iters: int, lead_cycles: int) -> tuple[float, float]:
    """(GPU µs per call, host µs per call to enqueue) of a loop of ``iters``
    calls. The loop is queued behind a sleep of ``lead_cycles`` so that the
    GPU runs the calls back to back."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    torch.cuda._sleep(lead_cycles)
    start.record()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    host = time.perf_counter() - t0
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1e3 / iters, host / iters * 1e6


def gpu_times(cases: list[dict], rounds: int) -> dict:
    """Median GPU µs per call (and min..max, and the host's µs per call to
    enqueue) of each path of each case; all rows take turns in each round."""
    host = {}
    for case in cases:
        for path, fn in case["paths"].items():
            for _ in range(3):
                fn()  # compile, load, tune
            torch.cuda.synchronize()
            host[case["name"], path] = max(host_seconds(fn, case["iters"]) for _ in range(2))
    cycles_per_s = _sleep_cycles_per_second()  # after the warm-up: the clocks are up
    # Three times the host's time for the loop, plus 300 µs: the GPU still sleeps when the loop is queued.
    leads = {key: int((3 * s + 300e-6) * cycles_per_s) for key, s in host.items()}
    samples = {key: [] for key in host}
    enqueue = {key: [] for key in host}
    short = {key: 0 for key in host}
    for _ in range(rounds):
        for case in cases:
            for path, fn in case["paths"].items():
                key = (case["name"], path)
                gpu_us, host_us = _gpu_sample(fn, case["iters"], leads[key])
                samples[key].append(gpu_us)
                enqueue[key].append(host_us)
                # The host was still queueing when the sleep ended: the GPU may have waited for it.
                short[key] += host_us * 1e-6 * case["iters"] > leads[key] / cycles_per_s
    out = {"us_per_call": {}, "us_per_call_min_max": {}, "host_enqueue_us_per_call": {}, "lead_ms": {},
           "samples_lead_too_short": {}}
    for case in cases:
        name, paths = case["name"], case["paths"]
        out["us_per_call"][name] = {p: statistics.median(samples[name, p]) for p in paths}
        out["us_per_call_min_max"][name] = {p: [min(samples[name, p]), max(samples[name, p])] for p in paths}
        out["host_enqueue_us_per_call"][name] = {p: statistics.median(enqueue[name, p]) for p in paths}
        out["lead_ms"][name] = {p: leads[name, p] / cycles_per_s * 1e3 for p in paths}
        out["samples_lead_too_short"][name] = {p: short[name, p] for p in paths}
    return out


# -- part 2: host cost of three tensor descriptors ------------------------------------------------------


@triton.jit
def tma_add_kernel(a_desc, b_desc, c_desc, BM: tl.constexpr, BN: tl.constexpr):
    """c = a + b over one BM x BN tile, loaded and stored through TMA descriptors."""
    c_desc.store([0, 0], a_desc.load([0, 0]) + b_desc.load([0, 0]))


@triton.jit
def pointer_add_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """c = a + b over one contiguous BM x BN tile, through plain pointers."""
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(c_ptr + offs, tl.load(a_ptr + offs) + tl.load(b_ptr + offs))


_TINY_OPS: dict = {}


def tiny_ops() -> dict:
    """The two host-overhead ops (registered on first use): ``tile_bench::tma_copy3``
    (three descriptors) and ``tile_bench::add_pointers`` (three pointers), each one
    launch of one program over a 64x64 tile."""
    if not _TINY_OPS:
        @tt.op("tile_bench::tma_copy3")
        def tma_copy3(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            """a + b for 64x64 tensors, through three TMA descriptors."""
            c = torch.empty_like(a)
            tma_add_kernel[(1,)](TensorDescriptor.from_tensor(a, [TINY, TINY]),
                                 TensorDescriptor.from_tensor(b, [TINY, TINY]),
                                 TensorDescriptor.from_tensor(c, [TINY, TINY]), BM=TINY, BN=TINY)
            return c

        @tt.op("tile_bench::add_pointers")
        def add_pointers(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            """a + b for contiguous 64x64 tensors, through pointers."""
            c = torch.empty_like(a)
            pointer_add_kernel[(1,)](a, b, c, BM=TINY, BN=TINY)
            return c

        _TINY_OPS.update(tma=tma_copy3, pointers=add_pointers)
    return _TINY_OPS


def triton_tma_add(a, b):
    """What a user writes with Triton: three descriptors built per call."""
    c = torch.empty_like(a)
    tma_add_kernel[(1,)](TensorDescriptor.from_tensor(a, [TINY, TINY]), TensorDescriptor.from_tensor(b, [TINY, TINY]),
                         TensorDescriptor.from_tensor(c, [TINY, TINY]), BM=TINY, BN=TINY)
    return c


def triton_pointer_add(a, b):
    c = torch.empty_like(a)
    pointer_add_kernel[(1,)](a, b, c, BM=TINY, BN=TINY)
    return c


def host_overhead(iters: int, rounds: int) -> dict:
    """Host µs per call (best and median of interleaved rounds) of the tiny op with
    three descriptors and with pointers, through torch_tile and through Triton."""
    tiny_ops()
    a = torch.randn(TINY, TINY, device=DEVICE, dtype=torch.float16)
    b = torch.randn(TINY, TINY, device=DEVICE, dtype=torch.float16)
    tma_op, pointer_op = torch.ops.tile_bench.tma_copy3, torch.ops.tile_bench.add_pointers
    rows = {
        "torch_tile, 3 descriptors": lambda: tma_op(a, b),
        "torch_tile, pointers": lambda: pointer_op(a, b),
        "Triton, 3 descriptors": lambda: triton_tma_add(a, b),
        "Triton, pointers": lambda: triton_pointer_add(a, b),
    }
    correct = {}
    for name, fn in rows.items():
        try:
            torch.testing.assert_close(fn(), a + b)
            correct[name] = True
        except AssertionError:
            correct[name] = False
    for fn in rows.values():
        host_seconds(fn, max(iters // 10, 10))  # warm, before the encodes are counted
    encodes = tt.runtime_counters()["tensor_map_encodes"]
    timed = interleaved_us({name: (lambda n, fn=fn: host_seconds(fn, n)) for name, fn in rows.items()}, iters, rounds)
    encodes = tt.runtime_counters()["tensor_map_encodes"] - encodes
    best = {name: t["best"] for name, t in timed.items()}
    return {
        "iters": iters,
        "rounds": rounds,
        "us_per_call": best,
        "us_per_call_median": {name: t["median"] for name, t in timed.items()},
        "descriptor_overhead_us": {
            "torch_tile": best["torch_tile, 3 descriptors"] - best["torch_tile, pointers"],
            "Triton": best["Triton, 3 descriptors"] - best["Triton, pointers"],
        },
        # CUtensorMaps torch_tile encoded during the timed loops (cached per thread: a, b and a reused c hit)
        "torch_tile_tensor_map_encodes_while_timed": encodes,
        "matches_torch": correct,
    }


# -- the run --------------------------------------------------------------------------------------------


def run(quick: bool) -> dict:
    sizes = QUICK if quick else FULL
    torch.manual_seed(0)
    cases = _cases(sizes)
    correctness = {case["name"]: check(case) for case in cases}
    gpu = gpu_times(cases, sizes["gpu_rounds"])
    host = host_overhead(sizes["host_iters"], sizes["host_rounds"])
    t = gpu["us_per_call"]
    ratios = {}
    for case in cases:
        row = t[case["name"]]
        ratios[case["name"]] = {"torch_tile_over_triton": row["torch_tile"] / row["Triton"],
                                "torch_over_torch_tile": row["torch"] / row["torch_tile"]}
    mm = t["matmul_tma"]
    flops = cases[0]["flops"]
    tflops = {p: flops / (us * 1e-6) / 1e12 for p, us in mm.items()}
    cublas_fraction = mm["torch"] / mm["torch_tile"]  # torch_tile's throughput as a fraction of cuBLAS's
    targets = {
        "matmul_tma torch_tile / Triton GPU time within 1.00 +- 0.03": abs(mm["torch_tile"] / mm["Triton"] - 1) <= 0.03,
        "matmul_tma torch_tile >= 90% of cuBLAS throughput": cublas_fraction >= 0.9,
        "descriptor overhead (3 descriptors) <= 1 us per call": host["descriptor_overhead_us"]["torch_tile"] <= 1.0,
        "every kernel matches torch": all(c["matches_torch"] for c in correctness.values())
        and all(host["matches_torch"].values()),
        "torch_tile runs the cubins Triton's launcher runs": all(c["same_cubin_as_triton"]
                                                                 for c in correctness.values()),
    }
    return {
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "quick": quick,
        "sizes": {case["name"]: case["what"] for case in cases},
        "gpu_iters_per_sample": {case["name"]: case["iters"] for case in cases},
        "gpu_rounds": sizes["gpu_rounds"],
        "matmul_tma_config": cases[0]["chosen"]["config"],
        "matmul_tma_launch": cases[0]["chosen"]["kwargs"],
        "correctness": correctness,
        "gpu_us_per_call": t,
        "gpu_us_per_call_min_max": gpu["us_per_call_min_max"],
        "host_enqueue_us_per_call": gpu["host_enqueue_us_per_call"],
        "gpu_lead_ms": gpu["lead_ms"],
        "gpu_samples_lead_too_short": gpu["samples_lead_too_short"],
        "matmul_tma_tflops": tflops,
        "ratios": {**ratios, "matmul_tma_torch_tile_fraction_of_cublas_throughput": cublas_fraction},
        "host_overhead": host,
        "targets_met": targets,
    }


def report(result: dict) -> None:
    print(f"{result['device']} (torch {result['torch']}, triton {result['triton']})"
          f"{'  [quick]' if result['quick'] else ''}")
    print(f"\nGPU µs per call, median of {result['gpu_rounds']} rounds")
    print(f"{'kernel':40s} {'torch_tile':>11s} {'Triton':>11s} {'torch':>11s} {'tile/Triton':>12s} {'torch/tile':>11s}")
    for name, row in result["gpu_us_per_call"].items():
        r = result["ratios"][name]
        label = f"{name} ({result['sizes'][name]})"
        print(f"{label:40s} {row['torch_tile']:11.2f} {row['Triton']:11.2f} {row['torch']:11.2f} "
              f"{r['torch_tile_over_triton']:12.3f} {r['torch_over_torch_tile']:11.3f}")
    tf = result["matmul_tma_tflops"]
    print(f"matmul_tma TFLOP/s: torch_tile {tf['torch_tile']:.0f}, Triton {tf['Triton']:.0f}, "
          f"cuBLAS {tf['torch']:.0f} (torch_tile at "
          f"{result['ratios']['matmul_tma_torch_tile_fraction_of_cublas_throughput']:.1%} of cuBLAS); "
          f"config {result['matmul_tma_config']}")
    print("\nhost µs per call to enqueue during the GPU loops (median)")
    for name, row in result["host_enqueue_us_per_call"].items():
        print(f"  {name:22s} " + "  ".join(f"{p} {us:8.2f}" for p, us in row.items()))
    short = [f"{n} {p} ({k})" for n, row in result["gpu_samples_lead_too_short"].items() for p, k in row.items() if k]
    if short:
        print("warning: the host was still queueing when the GPU's head start ended (GPU may have idled) in "
              "samples of: " + ", ".join(short))
    print("\ncorrectness")
    for name, c in result["correctness"].items():
        print(f"  {name:22s} matches torch: {c['matches_torch']} (max |err| {c['max_abs_err_vs_torch']:.3g}), "
              f"same output as Triton: {c['same_output_as_triton']}, same cubin: {c['same_cubin_as_triton']}"
              + (f"  [{c['error']}]" if "error" in c else ""))
    host = result["host_overhead"]
    print(f"\nhost µs per call, 64x64 fp16 add, best of {host['rounds']} rounds of {host['iters']} calls (median)")
    for name, us in host["us_per_call"].items():
        print(f"  {name:28s} {us:8.2f}  ({host['us_per_call_median'][name]:.2f})")
    d = host["descriptor_overhead_us"]
    print(f"descriptor overhead (3 descriptors - pointers): torch_tile {d['torch_tile']:.2f} µs, "
          f"Triton {d['Triton']:.2f} µs; torch_tile tensor-map encodes while timed: "
          f"{host['torch_tile_tensor_map_encodes_while_timed']}")
    print()
    for name, ok in result["targets_met"].items():
        print(f"target {name}: {'met' if ok else 'NOT met'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    parser.add_argument("--quick", action="store_true", help="small sizes, few iterations (smoke run)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("kernels: needs a CUDA GPU")
        return 0
    os.makedirs(args.out, exist_ok=True)
    result = run(args.quick)
    report(result)
    rows = {f"GPU {name} {path}": us for name, row in result["gpu_us_per_call"].items() for path, us in row.items()}
    rows.update({f"host {name}": us for name, us in result["host_overhead"]["us_per_call"].items()})
    write(args.out, "kernels", result, rows, unit="µs", log=True,
          xlabel="µs per call (GPU: median kernel time; host: best loop time per call)",
          title=f"Example kernels on {result['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
