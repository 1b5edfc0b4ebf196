#!/usr/bin/env bash
# NVIDIA compute-sanitizer over torch_tile's GPU kernels (GPU machine).
#   1. memcheck (out-of-bounds / misaligned global and shared accesses, invalid frees, CUDA API
#      errors) over the example-op tests: tests/test_gpu_ops.py and tests/test_gpu_hardening*.py.
#   2. racecheck (shared-memory data races) on tile::softmax and tile::layer_norm, whose Triton
#      kernels reduce across warps through shared memory.
# Writes everything to one file, $OUT/sanitizer.log (default OUT: ./gpu_out). Fails (non-zero) if
# compute-sanitizer reports an error (--error-exitcode), a test fails, or compute-sanitizer is
# missing or cannot attach to the GPU. PYTORCH_NO_CUDA_MEMORY_CACHING=1: torch's caching allocator
# would otherwise hide out-of-bounds accesses inside its big blocks from memcheck.
# Usage: bash dev/gpu_sanitize.sh [pytest paths/args for memcheck; default: the files above]
# Also run by `SANITIZE=1 bash dev/gpu_check.sh` after its tests (which passes $PY).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/gpu_out}"
mkdir -p "$OUT"
LOG="$OUT/sanitizer.log"
if [ -z "${PY:-}" ]; then
  source "$ROOT/scripts/env.sh" || exit 1  # sets $PY, builds in place
  set +e
fi
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

CS="${COMPUTE_SANITIZER:-}"
if [ -z "$CS" ]; then
  CS="$(command -v compute-sanitizer || true)"
  for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
           /usr/local/cuda*/bin/compute-sanitizer /usr/local/cuda*/compute-sanitizer/compute-sanitizer \
           /opt/nvidia/compute-sanitizer/compute-sanitizer; do
    [ -n "$CS" ] && break
    [ -x "$c" ] && CS="$c"
  done
fi
if [ -z "$CS" ] || [ ! -x "$CS" ]; then
  echo "gpu_sanitize: compute-sanitizer NOT FOUND (looked in PATH, /usr/local/cuda*/bin," \
       "/usr/local/cuda*/compute-sanitizer; set COMPUTE_SANITIZER=/path/to/it): nothing checked" | tee "$LOG" >&2
  exit 2
fi

export PYTORCH_NO_CUDA_MEMORY_CACHING=1
# --error-exitcode: any reported error makes the run fail; all processes (tests start subprocesses).
cs_common=("$CS" --error-exitcode 97 --target-processes all --print-limit 50)
status=0
section() { echo; echo "===== $*"; }
{
  echo "compute-sanitizer: $CS"
  "$CS" --version | tail -n 1
  "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
} > "$LOG" 2>&1

# A quick probe: some sandboxes (e.g. gVisor) answer "Device not supported"; say so plainly.
section "probe: memcheck on one torch allocation" >> "$LOG"
if ! "${cs_common[@]}" --tool memcheck "$PY" -c \
    "import torch; torch.ones(4, device='cuda').sum().item()" >> "$LOG" 2>&1; then
  echo "gpu_sanitize: compute-sanitizer could not run a trivial CUDA program on this machine" \
       "(see $LOG): nothing checked" | tee -a "$LOG" >&2
  exit 3
fi

# 1. memcheck over the example-op tests. Deselected: the tests that need torch's caching
# allocator (CUDA graph capture cannot call cudaMalloc; the steady-state test counts the
# allocator's blocks), which PYTORCH_NO_CUDA_MEMORY_CACHING=1 turns off.
if [ $# -gt 0 ]; then
  tests=("$@")
else
  tests=(tests/test_gpu_ops.py)
  for f in tests/test_gpu_hardening*.py; do [ -f "$f" ] && tests+=("$f"); done
fi
# Given paths get the same deselection, unless they bring their own -k.
case " $* " in *" -k "*) ;; *) tests+=(-k "not cuda_graph and not steady_state_no_python_no_extra_allocations") ;; esac
section "memcheck: pytest ${tests[*]}" >> "$LOG"
t0=$SECONDS
"${cs_common[@]}" --tool memcheck --leak-check no "$PY" -m pytest "${tests[@]}" -q -rs -p no:cacheprovider \
  >> "$LOG" 2>&1
rc=$?
echo "memcheck: exit $rc after $((SECONDS - t0)) s" >> "$LOG"
[ $rc = 0 ] || { status=1; echo "gpu_sanitize: memcheck FAILED (exit $rc; 97 = sanitizer errors)" >&2; }

# 2. racecheck (slow: it tracks every shared-memory access) on the shared-memory reductions.
section "racecheck: tile::softmax and tile::layer_norm" >> "$LOG"
t0=$SECONDS
"${cs_common[@]}" --tool racecheck --racecheck-report all "$PY" - >> "$LOG" 2>&1 <<'EOF'
import torch
import torch_tile.kernels  # noqa: F401  (registers the tile:: example ops)

torch.manual_seed(0)
for shape in [(64, 1000), (8, 4096), (5, 3000)]:  # num_warps 4 and 8: cross-warp reductions
    for dtype in (torch.float32, torch.float16):
        x = torch.randn(shape, device="cuda", dtype=dtype)
        w = torch.randn(shape[1], device="cuda", dtype=dtype)
        b = torch.randn(shape[1], device="cuda", dtype=dtype)
        for _ in range(2):
            y = torch.ops.tile.softmax(x)
            z = torch.ops.tile.layer_norm(x, w, b, 1e-5)[0]
        torch.cuda.synchronize()
        torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), atol=2e-3, rtol=2e-3)
        ref = torch.nn.functional.layer_norm(x.float(), shape[1:], w.float(), b.float(), 1e-5)
        torch.testing.assert_close(z.float(), ref, atol=2e-2, rtol=2e-2)
print("racecheck workload: softmax and layer_norm ran and matched torch")
EOF
rc=$?
echo "racecheck: exit $rc after $((SECONDS - t0)) s" >> "$LOG"
[ $rc = 0 ] || { status=1; echo "gpu_sanitize: racecheck FAILED (exit $rc; 97 = sanitizer errors)" >&2; }

grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|memcheck: exit|racecheck: exit" "$LOG" | tail -n 8 >&2
if [ $status = 0 ]; then
  echo "gpu_sanitize: OK: memcheck and racecheck found no errors (log: $LOG)" >&2
else
  echo "gpu_sanitize: FAILED (log: $LOG)" >&2
fi
exit $status
