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
# The corpora's libraries (real wrappers, autograd.Functions), pinned; installed without their dependencies (they
# need torch and Triton).
CORPUS_LIBS=(liger-kernel==0.8.5 fla-core==0.6.0 einops==0.8.1 cut-cross-entropy==25.1.1 conch-triton-kernels==1.3
             torchao==0.18.0 lightning-attn==0.0.5)
# cuTile (optional): cuda-tile and its compiler, tileiras, which runs ptxas and libnvvm of its own version
# (the pins cuda-tile[tileiras] resolves today, installed without their dependency tree, which would move
# torch's CUDA packages). tests/test_*_cutile.py skip without it.
CUTILE=(cuda-tile==1.7.0 nvidia-cuda-tileiras==13.4.92 nvidia-cuda-nvcc==13.4.92 nvidia-nvvm==13.4.92)
# TileLang (optional): tilelang and the pins of its dependencies it was tested with, installed without their
# dependency tree (which would move torch). It compiles with the CUDA toolkit's nvcc. tests/test_*_tilelang.py
# skip without it.
TILELANG=(tilelang==0.1.15 apache-tvm-ffi==0.1.12 z3-solver==4.15.4.0 torch-c-dlpack-ext==0.1.5 ml-dtypes==0.7.0
          cloudpickle==3.1.3 psutil==7.2.2 tqdm==4.70.1)
# Whether a Python has these modules, without importing them (torch takes seconds to import).
has() { "$1" -c "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in sys.argv[1:]))" "${@:2}"; }
if [ -x .venv/bin/python ] && has .venv/bin/python torch triton 2>/dev/null; then
  PY="$ROOT/.venv/bin/python"
elif has python3 torch triton pytest 2>/dev/null; then
  PY="$(command -v python3)"
else
  echo "torch_tile: creating .venv with torch==2.14.1 (first run only: a few minutes, about 6 GB)" >&2
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >&2
  # pip's own lines, one per package it fetches or installs: no silent minutes.
  .venv/bin/python -m pip install --progress-bar off "torch==2.14.1" numpy pytest pytest-xdist ninja 2>&1 |
    sed -nu 's/^\(Collecting\|Installing collected\|Successfully installed\) \(.\{0,100\}\).*/torch_tile:   \1 \2/p' >&2
  PY="$ROOT/.venv/bin/python"
fi
# One check of what is installed (a fraction of a second when all is there): the corpora's libraries missing or
# at another version, whether cuda.tile is there, and the torch version the extension must be built for.
read -r -d '' CHECK <<'PYEOF' || true
import importlib.metadata as m, importlib.util, os, re, sys
torch_dir = importlib.util.find_spec("torch").submodule_search_locations[0]
with open(os.path.join(torch_dir, "version.py")) as f:  # torch.__version__, without importing torch
    torch_version = re.search(r"^__version__ = '([^']+)'", f.read(), re.M).group(1)
missing = []
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    try:
        ok = m.version(name) == version
    except m.PackageNotFoundError:
        ok = False
    if not ok:
        missing.append(spec)
cutile = importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.tile") is not None
tilelang = importlib.util.find_spec("tilelang") is not None
print(torch_version, int(cutile), int(tilelang), *missing)
PYEOF
read -r TORCH_VERSION HAS_CUTILE HAS_TILELANG missing <<< "$("$PY" -c "$CHECK" "${CORPUS_LIBS[@]}")"
# The corpora's libraries where missing: from wheels/ first (the GPU machine has no network), then from PyPI.
# Without one, its corpus is skipped.
for spec in $missing; do
  echo "torch_tile: installing $spec (for tests/test_real_wrappers.py)" >&2
  { [ -d wheels ] && "$PY" -m pip install -q --no-deps --no-index --find-links wheels "$spec" >&2 2>/dev/null; } ||
    "$PY" -m pip install -q --no-deps --retries 1 --timeout 15 "$spec" >&2 ||
    echo "torch_tile: could not install $spec; its corpus in tests/test_real_wrappers.py will be skipped" >&2
done
if [ "$HAS_CUTILE" = 0 ]; then
  echo "torch_tile: installing cuda-tile (optional: the cuTile frontend's tests)" >&2
  { [ -d wheels ] && "$PY" -m pip install -q --no-deps --no-index --find-links wheels "${CUTILE[0]}" >&2 2>/dev/null; } ||
    "$PY" -m pip install -q --no-deps --retries 1 --timeout 60 "${CUTILE[@]}" >&2 ||
    echo "torch_tile: could not install cuda-tile; the cuTile tests will be skipped" >&2
fi
if [ "$HAS_TILELANG" = 0 ]; then
  echo "torch_tile: installing tilelang (optional: the TileLang frontend's tests)" >&2
  "$PY" -m pip install -q --no-deps --retries 0 --timeout 20 "${TILELANG[@]}" >&2 ||
    echo "torch_tile: could not install tilelang; the TileLang tests will be skipped" >&2
fi
# Build unless the in-place build is newer than every source and was made for this torch.
built_for=$(sed -n 's/^TORCH_VERSION = "\(.*\)"$/\1/p' torch_tile/_built_with.py 2>/dev/null || true)
extension=$(ls torch_tile/_C.*.so 2>/dev/null | head -1 || true)
if [ -n "$extension" ] && [ "$built_for" = "$TORCH_VERSION" ] && [ -f torch_tile/lib/libtorch_tile.so ] &&
   [ -z "$(find csrc setup.py cmake -newer "$extension" -print -quit)" ]; then
  :
else
  echo "torch_tile: building the extension with torch $TORCH_VERSION ($(nproc) jobs; full log in build.log)" >&2
  # ninja's progress, one line per file: [n/N] file
  : > build.log  # exists before tail follows it
  MAX_JOBS="${MAX_JOBS:-$(nproc)}" "$PY" setup.py build_ext --inplace > build.log 2>&1 &
  build=$!
  { tail -n +1 -f build.log --pid=$build 2>/dev/null |
      sed -nu 's|^\(\[[0-9]*/[0-9]*\]\) .* -c \([^ ]*\) -o .*|torch_tile:   \1 \2|p; s|^[gc]++ .*-shared.* -o \([^ ]*\).*|torch_tile:   linking \1|p' |
      sed -u "s|$ROOT/||" >&2; } || true  # progress only: the build's own status decides
  wait $build || {
    grep -E -A3 "error|Error" build.log | head -60 >&2
    echo "torch_tile: build failed (full log in build.log)" >&2
    exit 1
  }
  touch torch_tile/_C.*.so torch_tile/lib/libtorch_tile.so  # newer than the sources, relinked or not
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
