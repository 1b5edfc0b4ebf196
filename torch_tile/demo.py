"""torch_tile demo: ``python -m torch_tile.demo``.

Registers the example tile ops (vector add, fused softmax, layer-norm forward,
matmul; on CPU also the autotuned TMA matmul) and exercises them end to end:

* with a GPU: checks each op against torch in fp32/fp16/bf16 and prints host
  time per call for torch_tile, Triton's own launcher and torch eager;
* without a GPU: traces each op into its launch plan, computes the
  specialization keys in C++, compiles the variants to sm_90 cubins with
  Triton, and runs the ops on CPU tensors through Triton's interpreter,
  checking them against torch.
"""

from __future__ import annotations

import time

import torch
import triton

import torch_tile as tt
from torch_tile import kernels as K


def _examples(device: str, dtype: torch.dtype):
    g = torch.Generator(device="cpu").manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)

    x, y = rand(4096), rand(4096)
    s = rand(64, 1000)
    ln_x, ln_w, ln_b = rand(32, 512), rand(512), rand(512)
    a, b = rand(96, 80), rand(80, 64)
    return [
        ("add", K.add, (x, y), lambda: x + y, 1e-6),
        ("softmax", K.softmax, (s,), lambda: torch.softmax(s.float(), -1), 1e-5),
        ("layer_norm", K.layer_norm, (ln_x, ln_w, ln_b, 1e-5),
         lambda: torch.native_layer_norm(ln_x.float(), [512], ln_w.float(), ln_b.float(), 1e-5)[0], 1e-4),
        ("matmul", K.matmul, (a, b), lambda: a.double() @ b.double(), 5e-2),
    ]


def _error(got, ref) -> float:
    if isinstance(got, tuple):
        got = got[0]
    return (got.double() - ref.double()).abs().max().item()


def _describe_plan(plan) -> str:
    guards = "; ".join(g.text for g in plan.guards) or "none"
    launches = ", ".join(f"{launch.site.rsplit('/', 1)[-1]}" for launch in plan.launches)
    return f"{len(plan.allocs)} alloc(s), launch at {launches}; guards: {guards}"


def _cpu_examples():
    examples = _examples("cpu", torch.float32)
    g = torch.Generator(device="cpu").manual_seed(1)
    a = torch.randn(96, 64, generator=g, dtype=torch.float16)
    b = torch.randn(64, 128, generator=g, dtype=torch.float16)
    # Host tensor descriptors (TMA) and @triton.autotune; fp16 (the interpreter computes bf16 wrongly).
    return examples + [("matmul_tma", K.matmul_tma, (a, b), lambda: a.double() @ b.double(), 5e-3)]


def cpu_demo() -> None:
    print("No GPU: tracing, compiling to sm_90 and running on the CPU (Triton interpreter).\n")
    for name, op, args, ref, tol in _cpu_examples():
        plan = op.trace(*args)
        print(f"tile::{name}: {_describe_plan(plan)}")
        for kernel_id, words in op.variant_keys(*args):
            start = time.perf_counter()
            compiled, src = tt.compile_variant(kernel_id, words, 90)
            ms = (time.perf_counter() - start) * 1e3
            sig = ", ".join(f"{k}:{v}" for k, v in src.signature.items())
            aligned = [src.fn.arg_names[k[0]] for k, v in src.attrs.items() if ["tt.divisibility", 16] in v]
            print(f"  key {words}\n  -> {compiled.metadata.name}({sig})\n     16-aligned/divisible: {aligned}; "
                  f"cubin {len(compiled.asm['cubin'])} bytes, {compiled.metadata.num_warps} warps, "
                  f"{compiled.metadata.shared} B shared, compiled in {ms:.0f} ms")
        start = time.perf_counter()
        err = _error(op(*args), ref())
        status = "ok" if err <= tol * 10 else "MISMATCH"
        print(f"  CPU run vs torch: max error {err:.2e} ({status}, {(time.perf_counter() - start) * 1e3:.0f} ms)\n")


def host_seconds(fn, iters: int) -> float:
    """Host wall time of `iters` calls of `fn` (GPU idle before; work queued by the
    calls is drained after the clock stops). Also used by benchmarks/."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed


def _us_per_call(fn, iters: int = 2000) -> float:
    fn()  # warm
    return host_seconds(fn, iters) / iters * 1e6


def gpu_demo() -> None:
    print(f"GPU: {torch.cuda.get_device_name()} (torch {torch.__version__}, triton {triton.__version__})\n")
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for name, op, args, ref, tol in _examples("cuda", dtype):
            err = _error(op(*args), ref())
            scale = {torch.float32: 10, torch.float16: 1e3, torch.bfloat16: 1e4}[dtype]
            print(f"tile::{name:10s} {str(dtype):15s} max error vs torch {err:.2e} "
                  f"({'ok' if err <= tol * scale else 'MISMATCH'})")
    x = torch.randn(1024, device="cuda")
    y = torch.randn(1024, device="cuda")

    def triton_add():
        out = torch.empty_like(x)
        K.add_kernel[(1,)](x, y, out, 1024, BLOCK=1024)
        return out

    print("\nhost time per call, 1K-element add:")
    print(f"  torch.ops.tile.add   {_us_per_call(lambda: torch.ops.tile.add(x, y)):6.2f} µs")
    print(f"  Triton kernel[grid]  {_us_per_call(triton_add):6.2f} µs")
    print(f"  torch.add            {_us_per_call(lambda: torch.add(x, y)):6.2f} µs")
    print(f"\nruntime counters: {tt.runtime_counters()}")


def main() -> None:
    if torch.cuda.is_available():
        gpu_demo()
    else:
        cpu_demo()


if __name__ == "__main__":
    main()
