#!/usr/bin/env bash
# Build, run every test (GPU ones included), the benchmark and the demo on a
# GPU machine, in one go. Logs and JSON/PNG go to $OUT (default ./gpu_out).
# Usage (device tool): bash scripts/gpu_check.sh [pytest paths/args; default: tests]
OUT="${OUT:-$(cd "$(dirname "$0")/.." && pwd)/gpu_out}"
mkdir -p "$OUT"
source "$(dirname "$0")/env.sh"  # sets $PY, builds in place (exits on a failed build)
cp build.log "$OUT/build.log"
export PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1
status=0
"$PY" -m pytest "${@:-tests}" -q -rs --durations=10 2>&1 | tee "$OUT/pytest.log" || status=1
"$PY" benchmarks/launch_overhead.py --out "$OUT" 2>&1 | tee "$OUT/bench.log" || status=1
"$PY" -m torch_tile.demo 2>&1 | tee "$OUT/demo.log" || status=1
cat "$OUT/env.txt"
exit $status
