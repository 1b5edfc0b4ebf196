# cuTile on the lent GPU machine, which has no network, with the files a device call can carry (64 MiB: the
# tileiras, nvcc and nvvm wheels are 160 MB, so their three binaries go xz-compressed).
#   bash scripts/cutile_device.sh pack      here: cuda-tile's cp312 wheel, xz of tileiras/ptxas/libnvvm and
#                                           libdevice from this venv's pip packages, and the GPU tests' bundle
#                                           (scripts/cutile_bundle.py), into wheels/ (git-ignored; carry it)
#   source scripts/cutile_device.sh         there: installs them under /tmp/ct, puts them on PATH and PYTHONPATH,
#                                           and sets TORCH_TILE_CUTILE_BUNDLE
# tileiras fails on the lent H200 image (docs/CUTILE.md): the variants come from the bundle.
if [ "${1:-}" = pack ]; then
  set -e
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  PY="$ROOT/.venv/bin/python"
  CU13="$("$PY" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
  mkdir -p "$ROOT/wheels/cutile_tools"
  "$PY" -m pip download -q --no-deps --python-version 3.12 --only-binary=:all: --platform manylinux2014_x86_64 \
    -d "$ROOT/wheels" cuda-tile==1.7.0
  for f in bin/tileiras bin/ptxas lib/libnvvm.so.4; do xz -T2 -9 -c "$CU13/$f" > "$ROOT/wheels/cutile_tools/$(basename $f).xz"; done
  tar cJf "$ROOT/wheels/cutile_tools/libdevice.tar.xz" -C "$CU13/nvvm" libdevice
  PYTHONPATH="$ROOT" "$PY" "$ROOT/scripts/cutile_bundle.py" "$ROOT/wheels/cutile.ttb"
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
  export TORCH_TILE_CUTILE_BUNDLE="$PWD/wheels/cutile.ttb"
fi
