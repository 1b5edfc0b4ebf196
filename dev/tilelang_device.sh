# TileLang on the lent GPU machine, which has no network, with the files a device call can carry (64 MiB: the
# tilelang wheel alone is 50 MB and z3's 30 MB, so the unpacked packages go as one xz archive, ~35 MB).
#   bash dev/tilelang_device.sh pack    here: tilelang and the dependencies that machine lacks (apache-tvm-ffi,
#                                       z3-solver, torch-c-dlpack-ext), their cp312 wheels unpacked, stripped of
#                                       what neither import nor CUDA compiles use, into wheels/tilelang_site.tar.xz
#                                       (git-ignored; carry that file)
#   source dev/tilelang_device.sh       there: unpacks it under /tmp/tl_site and sets PYTHONPATH, CUDA_HOME (nvcc
#                                       is how TileLang compiles) and TILELANG_CACHE_DIR
TILELANG_PINS=(tilelang==0.1.15 apache-tvm-ffi==0.1.12 z3-solver==4.15.4.0 torch-c-dlpack-ext==0.1.5)
if [ "${1:-}" = pack ]; then
  set -e
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  work="$(mktemp -d)"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d "$work/wheels" "${TILELANG_PINS[@]}"
  mkdir -p "$work/site"
  for w in "$work"/wheels/*.whl; do python3 -m zipfile -e "$w" "$work/site"; done
  cd "$work/site"
  for data in *.data; do  # a wheel's purelib/platlib go to the top level
    for kind in purelib platlib; do [ -d "$data/$kind" ] && cp -a "$data/$kind/." . ; done
  done
  # z3's command-line program and C headers, other back ends' C++ sources, TVM's C++ sources, CUTLASS's tools:
  # not used by `import tilelang` or a CUDA compile (tilelang/src/tl_templates and cutlass/include stay).
  rm -rf ./*.data z3/include tilelang/src/ascend tilelang/src/rocm tilelang/3rdparty/tvm/src \
    tilelang/3rdparty/cutlass/tools build_backend.py
  strip --strip-unneeded z3/lib/libz3.so 2>/dev/null || true
  [ -f z3/lib/libz3.so.4.15 ] && ln -sf libz3.so z3/lib/libz3.so.4.15  # libtvm_compiler links this name
  mkdir -p "$ROOT/wheels"
  XZ_OPT="-T2 -9" tar -C "$work/site" -cJf "$ROOT/wheels/tilelang_site.tar.xz" .
  rm -rf "$work"
  ls -l "$ROOT/wheels/tilelang_site.tar.xz"
else
  mkdir -p /tmp/tl_site /tmp/tl_cache
  [ -f /tmp/tl_site/tilelang/__init__.py ] ||
    tar -C /tmp/tl_site -xJf "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/wheels/tilelang_site.tar.xz"
  export PYTHONPATH="/tmp/tl_site${PYTHONPATH:+:$PYTHONPATH}" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
  export TILELANG_CACHE_DIR=/tmp/tl_cache PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
fi
