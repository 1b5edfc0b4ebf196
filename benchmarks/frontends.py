"""Each frontend's row softmax through torch_tile against that frontend's own
Python launch, side by side in one run.

    python benchmarks/frontends.py [--rows 8] [--cols 128] [--rounds 15] [--out DIR]

Rows (host µs per call at a small shape, where the host decides; GPU µs per
call at a large one, CUDA events):

  triton, torch_tile       torch.ops.tile.softmax
  triton, own launcher     softmax_kernel[(rows,)](...) as a Triton user writes it
  cuda C++, torch_tile     torch.ops.tile.softmax_cuda (torch_tile/kernels/softmax.cu, NVRTC)
  cuda C++, ctypes launch  the same cubin through libcuda's cuLaunchKernel from Python (ctypes),
                           as a user of raw NVRTC launches it

  cuTile, torch_tile       torch.ops.tile.softmax_cutile (torch_tile/kernels/softmax_cutile.py)
  cuTile, ct.launch        softmax_rows through cuTile's own launcher, as a cuTile user writes it

  TileLang GEMM rows (the TileLang example is a matrix product; float16 (M, K) @ (K, N), host shape 64^3,
  GPU shape 4096^3), each against a GEMM through the Triton frontend:
  TileLang, torch_tile     torch.ops.tile.matmul_tilelang (torch_tile/kernels/matmul_tilelang.py)
  TileLang, own executor (tvm-ffi)   the same JITKernel called outside any op, as a TileLang user calls it
                           (TileLang's default execution backend, its host code compiled by TVM)
  TileLang, own executor (nvrtc, Python)   the same kernel compiled with execution_backend="nvrtc", whose
                           launcher is Python (cuda-python's cuLaunchKernelEx)
  TileLang, own executor (cython)   the same with execution_backend="cython" (a compiled C++ wrapper)
  triton GEMM, torch_tile  torch.ops.tile.matmul (the Triton frontend's GEMM op, same inputs)

  <op> (driver floor)      the op's last launch replayed with bare cuLaunchKernelEx from C++, each with an
                           output allocation: what the driver and allocator cost for that op's cubin and
                           arguments. An op's time above it is torch_tile's own work (host_us_above_driver_floor).

Host rows are measured in interleaved rounds (best, median and worst round reported).

The cuTile rows need cuda-tile, the TileLang rows tilelang; a row that cannot run here (cuTile missing, or
its compiler failing on this machine) is reported as missing, with why. With
$TORCH_TILE_CUTILE_BUNDLE (dev/cutile_bundle.py) the cuTile op's variants
come from that bundle. Targets: each frontend's op through torch_tile within
1.1x of the Triton op's host time, and >= 2x faster than that frontend's own
Python launch (TileLang: its Python executor; the other executors' ratios are reported); the TileLang op's GPU
time that of TileLang's executor (the same cubin). Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys

import torch
import triton

import torch_tile
from torch_tile.demo import host_seconds

sys.path.insert(0, os.path.dirname(__file__))

from _report import write  # noqa: E402
from _timing import interleaved_us  # noqa: E402
from torch_tile import kernels as K  # noqa: E402
from torch_tile.frontends.cuda.record import ctype  # noqa: E402
from torch_tile.kernels._common import acc_dtype  # noqa: E402
from torch_tile.kernels.softmax_cuda import softmax_rows  # noqa: E402
from torch_tile import _testing


def _gpu_us(fn, iters: int = 200) -> float:
    """GPU µs per call of ``fn`` (CUDA events around ``iters`` calls, best of 5 rounds). A sleep kernel ahead of
    them keeps the GPU busy while the host queues every call, so host time does not count."""
    fn()
    best = float("inf")
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(20_000_000)  # ~10 ms: longer than queuing `iters` calls takes the host
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / iters)
    return best


def triton_launch(x: torch.Tensor) -> torch.Tensor:
    """tile::softmax's kernel through Triton's own launcher (the body of the op, run as plain Python)."""
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    K.softmax_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK=block, ACC=acc_dtype(x.dtype),
                                num_warps=4 if block < 2048 else 8)
    return out


class CtypesLaunch:
    """tile::softmax_cuda's cubin launched with the driver API from Python (ctypes), per call: the
    output, the argument array, cuLaunchKernel on the current stream."""

    def __init__(self, x: torch.Tensor):
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self.block = 128 if x.shape[1] <= 2048 else 256
        major, minor = torch.cuda.get_device_capability()
        compiled = softmax_rows.compile((ctype(x.dtype), "float", self.block), capability=major * 10 + minor)
        torch.cuda.current_stream().synchronize()  # the primary context is current from here on
        self.module, self.function = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.cuda.cuModuleLoadData(ctypes.byref(self.module), compiled.cubin), "cuModuleLoadData")
        self._check(self.cuda.cuModuleGetFunction(ctypes.byref(self.function), self.module,
                                                  compiled.lowered_name.encode()), "cuModuleGetFunction")

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what} failed with CUresult {status}")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        values = (ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()), ctypes.c_longlong(x.stride(0)),
                  ctypes.c_longlong(out.stride(0)), ctypes.c_int(x.shape[1]))
        params = (ctypes.c_void_p * len(values))(*(ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self._check(self.cuda.cuLaunchKernel(self.function, x.shape[0], 1, 1, self.block, 1, 1, 0, stream, params,
                                             None), "cuLaunchKernel")
        return out


def _why(e: Exception) -> str:
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[-1][:200]}"


def cutile_launchers() -> tuple[dict, dict]:
    """The cuTile rows that can run here, and why the others cannot."""
    try:
        import cuda.tile as ct

        from torch_tile.kernels import softmax_cutile
    except ImportError as e:
        return {}, {"cuTile, torch_tile": f"no cuda-tile: {e}", "cuTile, ct.launch": f"no cuda-tile: {e}"}
    if os.environ.get("TORCH_TILE_CUTILE_BUNDLE"):
        torch_tile.load_bundle(os.environ["TORCH_TILE_CUTILE_BUNDLE"])

    def own_launch(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        ct.launch(torch.cuda.current_stream(), (x.shape[0],), softmax_cutile.softmax_rows,
                  (x, out, triton.next_power_of_2(x.shape[1])))
        return out

    return {"cuTile, torch_tile": softmax_cutile.softmax_cutile, "cuTile, ct.launch": own_launch}, {}


TILELANG_EXECUTORS = {"tvm-ffi": "tvm_ffi", "nvrtc, Python": "nvrtc", "cython": "cython"}


def tilelang_launchers() -> tuple[dict, dict]:
    """The GEMM rows (name -> fn(a, b)) that can run here, and why the others cannot."""
    try:
        import tilelang

        from torch_tile.kernels import matmul_tilelang
        matmul_tilelang.gemm_kernel()
    except Exception as e:  # noqa: BLE001 - no tilelang, or its compile failing here: reported as missing rows
        return {}, {name: _why(e) for name in ("TileLang, torch_tile", "TileLang, own executors")}
    rows = {"TileLang, torch_tile": matmul_tilelang.matmul_tilelang, "triton GEMM, torch_tile": K.matmul}
    missing = {}
    for label, backend in TILELANG_EXECUTORS.items():
        name = f"TileLang, own executor ({label})"
        try:
            rows[name] = tilelang.compile(matmul_tilelang.gemm_func(), out_idx=[-1], target="cuda",
                                          execution_backend=backend)
        except Exception as e:  # noqa: BLE001 - an executor that cannot build here is a missing row, with why
            missing[name] = _why(e)
    return rows, missing


def _gemm_inputs(n: int) -> tuple:
    return torch.randn(n, n, device="cuda", dtype=torch.float16), torch.randn(n, n, device="cuda", dtype=torch.float16)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Small enough that each kernel takes less GPU time than a call takes host time: a host row is the time to
    # queue its calls, and a kernel slower than that would fill the queue and be measured instead of the launch
    # path (gpu_us_host_shape says which).
    parser.add_argument("--rows", type=int, default=8, help="rows of the host-time shape")
    parser.add_argument("--cols", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=15, help="interleaved host-time rounds per row")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("frontends: needs a CUDA GPU")
        return 0
    os.makedirs(args.out, exist_ok=True)
    small = torch.randn(args.rows, args.cols, device="cuda")
    large = torch.randn(16384, 4096, device="cuda")
    reference = torch.softmax(small, -1)
    launchers = {
        "triton, torch_tile": K.softmax,
        "triton, own launcher": triton_launch,
        "cuda C++, torch_tile": K.softmax_cuda,
        "cuda C++, ctypes launch": CtypesLaunch(small),
    }
    cutile, missing = cutile_launchers()
    for name, fn in cutile.items():
        try:
            fn(small)
            torch.cuda.synchronize()
            launchers[name] = fn
        except Exception as e:  # noqa: BLE001 - reported as a missing row, with why
            missing[name] = _why(e)
    large_launchers = dict(launchers, **{"cuda C++, ctypes launch": CtypesLaunch(large)})
    gemm, gemm_missing = tilelang_launchers()
    missing.update(gemm_missing)
    gemm_small, gemm_large = _gemm_inputs(64), _gemm_inputs(4096)
    for name, fn in list(gemm.items()):  # every GEMM computes the same product
        try:
            got = fn(*gemm_small)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - an executor that cannot run here is a missing row, with why
            missing[name] = _why(e)
            del gemm[name]
            continue
        torch.testing.assert_close(got, gemm_small[0] @ gemm_small[1], atol=2e-2, rtol=2e-2,
                                   msg=lambda m, name=name: f"{name}: {m}")
    for name, fn in launchers.items():  # every launcher computes the same softmax
        torch.testing.assert_close(fn(small), reference, atol=1e-6, rtol=1e-5, msg=lambda m, name=name: f"{name}: {m}")
    # The driver's floor under each torch_tile op: its last launch replayed with bare cuLaunchKernelEx from C++,
    # each with an output allocation, as the op makes one. What an op costs above it is torch_tile's own work.
    ops = {name: op for name, op in (("triton, torch_tile", "tile::softmax"),
                                     ("cuda C++, torch_tile", "tile::softmax_cuda"),
                                     ("cuTile, torch_tile", "tile::softmax_cutile")) if name in launchers}
    floors = {f"{name} (driver floor)": (lambda n, op=op: _testing.bench_raw_launch(
        op, (small,), n, allocate_like=small)) for name, op in ops.items()}
    # Rounds interleaved: this machine's host µs drift by a third between runs, alike for every row within one.
    host_rounds = interleaved_us({**{name: (lambda n, fn=fn: host_seconds(lambda: fn(small), n))
                                     for name, fn in launchers.items()}, **floors,
                                  **{name: (lambda n, fn=fn: host_seconds(lambda: fn(*gemm_small), n))
                                     for name, fn in gemm.items()}}, iters=1000, rounds=args.rounds)
    host = {name: r["best"] for name, r in host_rounds.items()}
    above_floor = {name: host[name] - host[f"{name} (driver floor)"] for name in ops}
    # Where each op's own time goes: ns per call in each phase of its C++ implementation.
    phases = {name: _testing.bench_phases(op, (small,), 20000) for name, op in ops.items()}
    gpu = {name: _gpu_us(lambda fn=fn: fn(large)) for name, fn in large_launchers.items()}
    gpu_small = {name: _gpu_us(lambda fn=fn: fn(small)) for name, fn in launchers.items()}
    gpu.update({name: _gpu_us(lambda fn=fn: fn(*gemm_large), iters=20) for name, fn in gemm.items()})
    gpu_small.update({name: _gpu_us(lambda fn=fn: fn(*gemm_small)) for name, fn in gemm.items()})
    triton_op = host["triton, torch_tile"]
    ratios = {
        "cuda_op_over_triton_op": host["cuda C++, torch_tile"] / triton_op,
        "triton_own_over_triton_op": host["triton, own launcher"] / triton_op,
        "cuda_own_over_cuda_op": host["cuda C++, ctypes launch"] / host["cuda C++, torch_tile"],
    }
    targets = {
        "cuda C++ op within 1.1x of the Triton op (host)": ratios["cuda_op_over_triton_op"] <= 1.1,
        "Triton op >= 2x faster than Triton's own launcher": ratios["triton_own_over_triton_op"] >= 2.0,
        "cuda C++ op >= 2x faster than its ctypes launch": ratios["cuda_own_over_cuda_op"] >= 2.0,
    }
    ratios["cuda_op_over_triton_op_above_floor"] = above_floor["cuda C++, torch_tile"] / above_floor[
        "triton, torch_tile"]
    if "cuTile, torch_tile" in host:
        ratios["cutile_op_over_triton_op"] = host["cuTile, torch_tile"] / triton_op
        ratios["cutile_op_over_triton_op_above_floor"] = above_floor["cuTile, torch_tile"] / above_floor[
            "triton, torch_tile"]
        targets["cuTile op within 1.1x of the Triton op (host)"] = ratios["cutile_op_over_triton_op"] <= 1.1
    if "cuTile, torch_tile" in host and "cuTile, ct.launch" in host:
        ratios["cutile_own_over_cutile_op"] = host["cuTile, ct.launch"] / host["cuTile, torch_tile"]
        targets["cuTile op >= 2x faster than ct.launch"] = ratios["cutile_own_over_cutile_op"] >= 2.0
    if "TileLang, torch_tile" in host:
        op_host = host["TileLang, torch_tile"]
        ratios["tilelang_op_over_triton_gemm_op"] = op_host / host["triton GEMM, torch_tile"]
        within = ratios["tilelang_op_over_triton_gemm_op"] <= 1.1
        targets["TileLang op within 1.1x of the Triton GEMM op (host)"] = within
        for label, backend in TILELANG_EXECUTORS.items():
            name = f"TileLang, own executor ({label})"
            if name in host:
                ratios[f"tilelang_{backend}_over_tilelang_op"] = host[name] / op_host
                ratios[f"tilelang_op_gpu_over_{backend}_gpu"] = gpu["TileLang, torch_tile"] / gpu[name]
        if "tilelang_nvrtc_over_tilelang_op" in ratios:
            targets["TileLang op >= 2x faster than TileLang's Python executor"] = \
                ratios["tilelang_nvrtc_over_tilelang_op"] >= 2.0
        if "tilelang_op_gpu_over_tvm_ffi_gpu" in ratios:
            # The same cubin as TileLang's default executor: equal GPU time up to CUDA events' noise (3%).
            targets["TileLang op GPU time equal to its executor's"] = \
                abs(ratios["tilelang_op_gpu_over_tvm_ffi_gpu"] - 1) <= 0.03
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "host_shape": [args.rows, args.cols], "gpu_shape": list(large.shape),
              "gemm_host_shape": list(gemm_small[0].shape), "gemm_gpu_shape": list(gemm_large[0].shape),
              "host_us": host,
              "host_us_rounds": host_rounds, "host_us_above_driver_floor": above_floor,
              "phases_ns": phases, "gpu_us": gpu,
              "gpu_us_host_shape": gpu_small,
              "ratios": ratios, "targets_met": targets, "missing": missing}
    print(f"{'row':40s} {'host µs/call':>13s} {'median':>8s} {'worst':>8s} {'GPU µs, same':>13s} "
          f"{'GPU µs, large':>14s}")
    for name in [*launchers, *gemm]:
        r = host_rounds[name]
        print(f"{name:40s} {host[name]:13.2f} {r['median']:8.2f} {r['worst']:8.2f} {gpu_small[name]:13.2f} "
              f"{gpu[name]:14.2f}")
    for name in floors:
        r = host_rounds[name]
        print(f"{name:40s} {host[name]:13.2f} {r['median']:8.2f} {r['worst']:8.2f}")
    for name, us in above_floor.items():
        print(f"{name:28s} above its driver floor: {us:6.2f} µs; phases (ns): "
              + ", ".join(f"{phase} {ns:.0f}" for phase, ns in phases[name].items()))
    for name, value in ratios.items():
        print(f"{name:34s} {value:6.2f}")
    for name, ok in targets.items():
        print(f"target {name}: {'met' if ok else 'NOT met'}")
    for name, why in missing.items():
        print(f"missing row {name}: {why}")
    write(args.out, "frontends", result, host, xlabel="host µs per call", title="softmax per frontend",
          unit="µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
