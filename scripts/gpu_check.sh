#!/usr/bin/env bash
# Build, run every test (GPU ones first), the benchmarks and the demo on a GPU
# machine, in one go. Writes to $OUT (default ./gpu_out), at most 8 files (the
# device tool's limit): build.log, pytest_gpu.log, pytest_cpu.log, bench.log
# (environment, benchmark tables, demo), and each benchmark's JSON and PNG.
# Usage (device tool): bash scripts/gpu_check.sh [pytest paths/args; default: all tests]
OUT="${OUT:-$(cd "$(dirname "$0")/.." && pwd)/gpu_out}"
mkdir -p "$OUT"
source "$(dirname "$0")/env.sh"  # sets $PY, builds in place (exits on a failed build)
cp build.log "$OUT/build.log"
export PYTHONUNBUFFERED=1
status=0
if [ $# -gt 0 ]; then
  "$PY" -m pytest "$@" -q -rs --durations=10 > "$OUT/pytest_gpu.log" 2>&1 || status=1
else
  "$PY" -m pytest tests/test_gpu_*.py -q -rs --durations=10 > "$OUT/pytest_gpu.log" 2>&1 || status=1
fi
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
  "$PY" benchmarks/launch_overhead.py --out "$OUT" || status=1
  "$PY" benchmarks/training_step.py --out "$OUT" ${TRAINING_PROFILE:+--profile $TRAINING_PROFILE} || status=1
  "$PY" examples/train_tiny_transformer.py --steps 300 --modes torch tile tile_compiled || status=1
  "$PY" -m torch_tile.demo || status=1
} > "$OUT/bench.log" 2>&1
if [ $# -eq 0 ]; then
  "$PY" -m pytest tests/test_cpu_*.py -q -rs > "$OUT/pytest_cpu.log" 2>&1 || status=1
fi
tail -3 "$OUT/pytest_gpu.log"
exit $status
