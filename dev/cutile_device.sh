# cuTile on the lent GPU machine, which has no network, with the files a device call can carry (64 MiB: the
# tileiras, nvcc and nvvm wheels are 160 MB, so their three binaries go xz-compressed).
#   bash dev/cutile_device.sh pack      here: cuda-tile's cp312 wheel, xz of tileiras/ptxas/libnvvm and
#                                           libdevice from this venv's pip packages (once), the GPU tests' bundle
#                                           (dev/cutile_bundle.py) and cuTile's own disk cache of the same
#                                           compiles, into wheels/ (git-ignored; carry it)
#   source dev/cutile_device.sh         there: installs them under /tmp/ct, puts them on PATH and PYTHONPATH,
#                                           copies the checkout to $CUTILE_ROOT and works there, and sets
#                                           TORCH_TILE_CUTILE_BUNDLE and CUDA_TILE_CACHE_DIR
# tileiras fails on the lent H200 image (docs/CUTILE.md): torch_tile's variants come from the bundle, and
# cuTile's own ct.launch (benchmarks/frontends.py's baseline) finds its cubins in the cache written here. cuTile
# keys that cache by the kernel's Tile IR, whose debug info names the kernel's file, so both machines reach the
# checkout through one path, $CUTILE_ROOT, and the bytecode version is the one cuTile falls back to there (13.1,
# as its probe of tileiras fails). A ct.launch that misses the cache (its specialisation differing from
# the one torch_tile compiled) runs tileiras and fails, and the benchmark reports the row missing.
CUTILE_ROOT=/tmp/torch_tile
if [ "${1:-}" = pack ]; then
  set -e
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  PY="$ROOT/.venv/bin/python"
  CU13="$("$PY" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
  mkdir -p "$ROOT/wheels/cutile_tools"
  "$PY" -m pip download -q --no-deps --python-version 3.12 --only-binary=:all: --platform manylinux2014_x86_64 \
    -d "$ROOT/wheels" cuda-tile==1.7.0
  for f in bin/tileiras bin/ptxas lib/libnvvm.so.4; do
    xz_file="$ROOT/wheels/cutile_tools/$(basename $f).xz"
    [ -s "$xz_file" ] || xz -T2 -9 -c "$CU13/$f" > "$xz_file"
  done
  [ -s "$ROOT/wheels/cutile_tools/libdevice.tar.xz" ] ||
    tar cJf "$ROOT/wheels/cutile_tools/libdevice.tar.xz" -C "$CU13/nvvm" libdevice
  # Every variant compiled afresh (an empty torch_tile cache), so cuTile's own cache receives each compile.
  rm -rf "$ROOT/wheels/cutile_cache"
  if [ -e "$CUTILE_ROOT" ] && [ ! -L "$CUTILE_ROOT" ]; then
    echo "cutile_device.sh: $CUTILE_ROOT exists and is not a link; remove it first" >&2
    exit 1
  fi
  ln -sfn "$ROOT" "$CUTILE_ROOT"
  fresh="$(mktemp -d)"
  (cd "$CUTILE_ROOT" && PATH="$CU13/bin:$PATH" PYTHONPATH="$CUTILE_ROOT" TORCH_TILE_CACHE_DIR="$fresh" \
    CUDA_TILE_CACHE_DIR="$ROOT/wheels/cutile_cache" "$PY" dev/cutile_bundle.py wheels/cutile.ttb --tileir-bytecode 13.1)
  rm -rf "$fresh"
  du -sh "$ROOT/wheels"
else
  T=/tmp/ct
  "${PY:-python3}" -m pip install -q --no-deps --no-index --target $T wheels/cuda_tile-1.7.0-cp312*.whl
  mkdir -p $T/tc/bin $T/tc/lib $T/tc/nvvm/lib64
  xz -dc wheels/cutile_tools/tileiras.xz > $T/tc/bin/tileiras
  xz -dc wheels/cutile_tools/ptxas.xz > $T/tc/bin/ptxas
  xz -dc wheels/cutile_tools/libnvvm.so.4.xz > $T/tc/lib/libnvvm.so.4
  chmod +x $T/tc/bin/tileiras $T/tc/bin/ptxas
  ln -sf $T/tc/lib/libnvvm.so.4 $T/tc/nvvm/lib64/libnvvm.so
  tar xJf wheels/cutile_tools/libdevice.tar.xz -C $T/tc/nvvm
  export PATH=$T/tc/bin:$PATH PYTHONPATH=$T${PYTHONPATH:+:$PYTHONPATH}
  # A copy, not a link: `python -m pytest` puts the working directory on sys.path as the kernel resolves it,
  # so through a link torch_tile would be imported from the checkout's real path, which the cache does not name.
  if [ "$(pwd -P)" != "$CUTILE_ROOT" ]; then
    mkdir -p "$CUTILE_ROOT"
    cp -a . "$CUTILE_ROOT/"
    cd "$CUTILE_ROOT"
  fi
  export TORCH_TILE_CUTILE_BUNDLE="$PWD/wheels/cutile.ttb" CUDA_TILE_CACHE_DIR="$PWD/wheels/cutile_cache"
fi
