#!/usr/bin/env bash
# Build, run every test (GPU ones first), the DDP example (with 2+ GPUs), the
# benchmarks, the training example and the demo on a GPU machine, in one go.
# Writes to $OUT (default ./gpu_out): pytest.log, bench.log (environment, DDP,
# benchmark tables, example, demo) and each benchmark's JSON and PNG. The device
# tool returns at most 8 files: pick three benchmarks with BENCHMARKS (default:
# all four); RUN_EXAMPLES=0 skips the training example and the demo. A failed
# build prints its errors. SANITIZE=1 then runs dev/gpu_sanitize.sh (compute-sanitizer memcheck
# over the example-op tests, racecheck on softmax/layer_norm) into one more file, sanitizer.log:
# with it, pick at most two benchmarks to stay within 8 files.
# Usage (GPU machine): bash dev/gpu_check.sh [pytest paths/args; default: all tests]
OUT="${OUT:-$(cd "$(dirname "$0")/.." && pwd)/gpu_out}"
mkdir -p "$OUT"
source "$(dirname "$0")/../scripts/env.sh"  # sets $PY, builds in place (exits on a failed build)
export PYTHONUNBUFFERED=1
status=0
if [ $# -gt 0 ]; then tests=("$@"); else tests=(tests/test_gpu_*.py); fi
"$PY" -m pytest "${tests[@]}" -q -rs --durations=10 > "$OUT/pytest.log" 2>&1 || status=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  if [ "$("$PY" -c 'import torch; print(torch.cuda.device_count())')" -ge 2 ]; then
    echo "--- DDP: torchrun --nproc-per-node=2 examples/ddp_train.py (shared cache dir)"
    TORCH_TILE_CACHE_DIR="$(mktemp -d)" NCCL_NVLS_ENABLE=0 "$PY" -m torch.distributed.run --nproc-per-node=2 \
      examples/ddp_train.py --steps 50 || status=1
  fi
  for bench in ${BENCHMARKS:-launch_overhead training_step warm_start kernels}; do
    case "$bench" in
      training_step) "$PY" benchmarks/training_step.py --out "$OUT" ${TRAINING_PROFILE:+--profile $TRAINING_PROFILE} ;;
      warm_start) "$PY" benchmarks/warm_start.py --repeats "${WARM_REPEATS:-2}" --out "$OUT" ;;
      launch_overhead) "$PY" benchmarks/launch_overhead.py --cpp-program --out "$OUT" ;;
      *) "$PY" "benchmarks/$bench.py" --out "$OUT" ;;
    esac || status=1
  done
  if [ "${RUN_EXAMPLES:-1}" = 1 ]; then
    "$PY" examples/train_tiny_transformer.py --steps 300 --modes torch tile tile_compiled || status=1
    "$PY" -m torch_tile.demo || status=1
  fi
} > "$OUT/bench.log" 2>&1
if [ $# -eq 0 ]; then
  "$PY" -m pytest ${CPU_TESTS:-tests/test_cpu_*.py} -q -rs >> "$OUT/pytest.log" 2>&1 || status=1
fi
grep -E "passed|failed" "$OUT/pytest.log" | tail -2
if [ "${SANITIZE:-0}" = 1 ]; then
  PY="$PY" OUT="$OUT" bash "$(dirname "$0")/gpu_sanitize.sh" || status=1
fi
exit $status
