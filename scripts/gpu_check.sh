#!/usr/bin/env bash
# Build, run every test (GPU ones included), the benchmark and the demo on a
# GPU machine, in one go. Logs and JSON/PNG go to $OUT (default ./gpu_out).
# Usage (device tool): bash scripts/gpu_check.sh [pytest paths/args; default: tests]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python3}"
status=0
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  "$PY" -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1
MAX_JOBS="$(nproc)" "$PY" setup.py build_ext --inplace > "$OUT/build.log" 2>&1 || { echo "build failed"; tail -40 "$OUT/build.log"; exit 1; }
"$PY" -m pytest "${@:-tests}" -q -rs --durations=10 2>&1 | tee "$OUT/pytest.log" || status=1
"$PY" benchmarks/launch_overhead.py --out "$OUT" 2>&1 | tee "$OUT/bench.log" || status=1
"$PY" -m torch_tile.demo 2>&1 | tee "$OUT/demo.log" || status=1
cat "$OUT/env.txt"
exit $status
