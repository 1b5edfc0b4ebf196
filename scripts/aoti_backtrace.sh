#!/usr/bin/env bash
# The native stack of AOTInductor's package-load crash on the GPU machine (issue 13, item 4):
# compiles a plain model (no tile op) with aoti_compile_and_package, then loads it under
# cuda-gdb (the machine has no gdb; cuda-gdb debugs host code too) and prints the backtrace.
# Usage: bash scripts/aoti_backtrace.sh OUT_DIR   (PY: the Python with torch; default python3)
set -u
OUT="${1:-/tmp/aoti_bt}"
PY="${PY:-python3}"
mkdir -p "$OUT"
"$PY" - "$OUT/plain.pt2" <<'PYEOF'
import sys, torch, torch._inductor
m = torch.nn.Linear(64, 64).cuda().eval()
x = torch.randn(8, 64, device="cuda")
ep = torch.export.export(m, (x,))
print("compiled", torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1]))
PYEOF
cat > "$OUT/load.py" <<'PYEOF'
import sys, torch, torch._inductor
runner = torch._inductor.aoti_load_package(sys.argv[1])
print("loaded; output", runner(torch.randn(8, 64, device="cuda")).shape)
PYEOF
timeout 240 cuda-gdb -batch -ex "set pagination off" -ex run -ex "bt 40" -ex "info sharedlibrary" \
  --args "$PY" "$OUT/load.py" "$OUT/plain.pt2" 2>&1 | grep -v "^\[New Thread\|^\[Thread"
