#!/usr/bin/env bash
# AOTInductor on the GPU machine (issue 13, item 4): the package's wrapper .so crashes in std::regex
# (parse_device_str) when loaded into torch's process. This runs scripts/aoti_probe.py's plain and tile
# attempts with the wrapper linked -static-libstdc++ (through a CXX wrapper: Inductor compiles with $CXX),
# so that it carries its own libstdc++. Seen on the H200 image (session 6): it crashes the same way.
# Usage: bash scripts/aoti_static_libstdcxx.sh OUT_DIR   (PY: the Python with torch; default python3)
set -u
OUT="${1:-/tmp/aoti_static}"
PY="${PY:-python3}"
mkdir -p "$OUT"
cat > "$OUT/gxx_static" <<'SH'
#!/usr/bin/env bash
# Links of shared objects only: Inductor also runs the compiler for precompiled headers.
case " $* " in *" -shared "*) exec g++ "$@" -static-libstdc++ -static-libgcc ;; *) exec g++ "$@" ;; esac
SH
chmod +x "$OUT/gxx_static"
CXX="$OUT/gxx_static" "$PY" "$(dirname "$0")/aoti_probe.py" "$OUT" ${MODELS:-plain tile}
