# Sourced by run_demo.sh and run_tests.sh: finds or makes a Python with torch
# and Triton, then builds torch_tile's extension in place. Sets $PY.
#   - a ./.venv that has torch: use it;
#   - else a python3 that already has torch and triton (e.g. a GPU machine's image): use it;
#   - else create ./.venv with torch==2.14.1 (which brings Triton) from PyPI.
# Then the pinned libraries of the real-wrapper corpora (tests/test_real_wrappers.py skips a corpus without its
# library), if missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# The real-wrapper corpora's libraries, pinned; installed without their dependencies (they need torch and Triton).
CORPUS_LIBS=(liger-kernel==0.8.5 fla-core==0.6.0 einops==0.8.1 cut-cross-entropy==25.1.1 conch-triton-kernels==1.3
             torchao==0.18.0)
# cuTile (optional): cuda-tile and its compiler, tileiras, which runs ptxas and libnvvm of its own version
# (the pins cuda-tile[tileiras] resolves today, installed without their dependency tree, which would move
# torch's CUDA packages). tests/test_*_cutile.py skip without it.
CUTILE=(cuda-tile==1.7.0 nvidia-cuda-tileiras==13.4.92 nvidia-cuda-nvcc==13.4.92 nvidia-nvvm==13.4.92)
if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch, triton" 2>/dev/null; then
  PY="$ROOT/.venv/bin/python"
elif python3 -c "import torch, triton, pytest" 2>/dev/null; then
  PY="$(command -v python3)"
else
  echo "torch_tile: creating .venv with torch==2.14.1 (first run only)" >&2
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >&2
  .venv/bin/python -m pip install -q "torch==2.14.1" numpy pytest ninja >&2
  PY="$ROOT/.venv/bin/python"
fi
# The corpora's libraries where missing (one cheap check when all are there): from wheels/ first (the GPU machine
# has no network), then from PyPI. Without one, its corpus is skipped.
missing=$("$PY" - "${CORPUS_LIBS[@]}" <<'PYEOF'
import importlib.metadata as m, sys
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    try:
        ok = m.version(name) == version
    except m.PackageNotFoundError:
        ok = False
    if not ok:
        print(spec)
PYEOF
)
for spec in $missing; do
  { [ -d wheels ] && "$PY" -m pip install -q --no-deps --no-index --find-links wheels "$spec" >&2 2>/dev/null; } ||
    "$PY" -m pip install -q --no-deps --retries 1 --timeout 15 "$spec" >&2 ||
    echo "torch_tile: could not install $spec; its corpus in tests/test_real_wrappers.py will be skipped" >&2
done
"$PY" -c "import cuda.tile" 2>/dev/null || {
  { [ -d wheels ] && "$PY" -m pip install -q --no-deps --no-index --find-links wheels "${CUTILE[0]}" >&2 2>/dev/null; } ||
    "$PY" -m pip install -q --no-deps --retries 1 --timeout 60 "${CUTILE[@]}" >&2 ||
    echo "torch_tile: could not install cuda-tile; the cuTile tests will be skipped" >&2
}
echo "torch_tile: building the extension with $("$PY" -c 'import torch; print("torch", torch.__version__)')" >&2
MAX_JOBS="${MAX_JOBS:-$(nproc)}" "$PY" setup.py -q build_ext --inplace > build.log 2>&1 || {
  grep -E -A3 "error|Error" build.log | head -60 >&2
  echo "torch_tile: build failed (full log in build.log)" >&2
  exit 1
}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
