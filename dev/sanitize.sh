#!/usr/bin/env bash
# The CPU test suite (tests/test_cpu_*.py) under AddressSanitizer + UndefinedBehaviorSanitizer.
# Usage: bash dev/sanitize.sh [pytest paths/args; default: tests/test_cpu_*.py]
#
# It never touches the in-place build (torch_tile/_C*.so, build/): it mirrors the working tree into
# $SANITIZE_DIR/src (default .sanitize/src, git-ignored; only changed files are copied, so ninja
# rebuilds only what changed), sources that copy's scripts/env.sh with TORCH_TILE_SANITIZE=1 (so
# setup.py adds -fsanitize=address,undefined -fno-sanitize-recover=all and env.sh builds the copy in
# place and puts it first on PYTHONPATH), and runs pytest from the copy, with libasan and libstdc++
# preloaded into Python (which is not built with ASan) and PYTHONMALLOC=malloc (so ASan also sees
# Python's own allocations). ASan reports go to $SANITIZE_DIR/logs/asan.<pid>, UBSan's to stderr,
# which pytest (--capture=sys) leaves alone: the run's output is kept in logs/pytest.log and any
# report found there is copied to logs/ubsan.stderr.
# Exit status: non-zero on a test failure OR any sanitizer report.
# Third-party reports (torch, Triton, numpy, compilers run as subprocesses) are suppressed only
# where listed, with a reason each, in dev/asan.supp and dev/ubsan.supp.
# SANITIZE_PATCH=file.patch applies a patch (-p1) to the copy only: a way to check that the script
# catches a planted bug without touching the real tree. SANITIZE_REF=<commit> tests that commit
# instead of the working tree.
set -euo pipefail
TREE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"  # not ROOT: env.sh sets that
SANITIZE_DIR="${SANITIZE_DIR:-$TREE/.sanitize}"
SRC="$SANITIZE_DIR/src"
LOGS="$SANITIZE_DIR/logs"
mkdir -p "$SRC" "$LOGS"

# 1. Mirror the tree (tracked + untracked-but-not-ignored files; or, with SANITIZE_REF=HEAD say, that
# commit, e.g. while someone else's edit is half done), copying only files whose content differs:
# unchanged sources keep their mtime (no rebuild), changed ones get a new one (rebuild); files gone
# from the tree are removed from the copy.
cd "$TREE"
FROM="$TREE"
if [ -n "${SANITIZE_REF:-}" ]; then
  FROM="$SANITIZE_DIR/ref"
  rm -rf "$FROM" && mkdir -p "$FROM"
  git archive --format=tar "$SANITIZE_REF" | tar -x -C "$FROM"
  list_files() { (cd "$FROM" && find . -type f -print0); }
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list_files() { git ls-files -z --cached --others --exclude-standard; }
else
  list_files() { find . -path ./.git -prune -o -path ./.venv -prune -o -path ./build -prune \
    -o -path "./${SANITIZE_DIR#"$TREE"/}" -prune -o -type f ! -name '*.so' -print0; }
fi
declare -A keep=()
while IFS= read -r -d '' f; do
  f="${f#./}"
  [ -f "$FROM/$f" ] || continue  # deleted but still in the index
  keep["$f"]=1
  if ! cmp -s "$FROM/$f" "$SRC/$f"; then mkdir -p "$SRC/$(dirname "$f")" && cp "$FROM/$f" "$SRC/$f"; fi
done < <(list_files)
while IFS= read -r -d '' f; do
  f="${f#./}"
  [ -n "${keep[$f]:-}" ] || rm -f "$SRC/$f"
done < <(cd "$SRC" && find . \( -path ./build -o -path ./.venv -o -name __pycache__ \) -prune \
           -o -type f ! -name '*.so' ! -name build.log -print0)
# The copy uses this tree's .venv (env.sh looks for ./.venv first).
if [ -d "$TREE/.venv" ] && [ ! -e "$SRC/.venv" ]; then ln -s "$TREE/.venv" "$SRC/.venv"; fi
if [ -n "${SANITIZE_PATCH:-}" ]; then
  echo "sanitize: applying $SANITIZE_PATCH to the copy in $SRC (not to the real tree)" >&2
  patch -d "$SRC" -p1 --forward < "$SANITIZE_PATCH" >&2
fi

# 2. Build the copy with the sanitizers (env.sh: picks $PY, builds in place in the copy, which is
# $SRC/build and $SRC/torch_tile/_C*.so, and exports PYTHONPATH=$SRC).
export TORCH_TILE_SANITIZE=1
source "$SRC/scripts/env.sh"
cd "$SRC"

# 3. Runtime libraries: ASan must be the first library loaded into the (uninstrumented) Python;
# libstdc++ is preloaded with it so that ASan's __cxa_throw interceptor finds the real one.
CXX="${CXX:-g++}"
ASAN_LIB="$("$CXX" -print-file-name=libasan.so)"
STDCXX_LIB="$("$CXX" -print-file-name=libstdc++.so)"
for lib in "$ASAN_LIB" "$STDCXX_LIB"; do
  [ -f "$lib" ] || { echo "sanitize: $CXX -print-file-name found no ${lib##*/}" >&2; exit 1; }
done
rm -f "$LOGS"/asan.* "$LOGS"/ubsan.* "$LOGS/pytest.log"
SUPP="$TREE/dev"  # this tree's suppressions, also with SANITIZE_REF
# detect_leaks=0: CPython and torch keep their allocations to exit by design.
# halt_on_error / -fno-sanitize-recover: the first report aborts the process that made it.
ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=86:log_path=$LOGS/asan"
# allocator_may_return_null: an impossible allocation (a test of size limits) raises in torch as
# without ASan, instead of ASan aborting the process.
ASAN_OPTIONS+=":symbolize=1:print_summary=1:allocator_may_return_null=1"
ASAN_OPTIONS+=":suppressions=$SUPP/asan.supp${ASAN_OPTIONS_EXTRA:+:$ASAN_OPTIONS_EXTRA}"
# (log_path for UBSan is kept for toolchains that honour it; GCC 12's ASan+UBSan does not.)
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87:log_path=$LOGS/ubsan"
UBSAN_OPTIONS+=":suppressions=$SUPP/ubsan.supp${UBSAN_OPTIONS_EXTRA:+:$UBSAN_OPTIONS_EXTRA}"
export ASAN_OPTIONS UBSAN_OPTIONS
san_env=(env LD_PRELOAD="$ASAN_LIB:$STDCXX_LIB${LD_PRELOAD:+:$LD_PRELOAD}" PYTHONMALLOC=malloc
         PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1)

report() {  # prints the sanitizer reports; fails if there is any
  local r found=0
  for r in "$LOGS"/asan.* "$LOGS"/ubsan.*; do
    [ -s "$r" ] || continue
    found=1
    echo "=== sanitizer report: $r (CPython's own frames left out here)" >&2
    grep -v -E ' in _?Py[A-Za-z_]+ |Python/[a-z_]+\.c:|Objects/[a-z_]+\.c:|Include/.*\.h:' "$r" | head -n 70 >&2
  done
  if [ $found = 1 ]; then
    echo "sanitize: FAILED: sanitizer reports above; full reports in $LOGS" >&2
    exit 1
  fi
}

# 4. Check that the sanitized copy is what Python imports, then run the tests.
"${san_env[@]}" "$PY" - "$SRC" <<'EOF' >&2 || { report; echo "sanitize: the sanitized build does not import" >&2; exit 1; }
import os, sys, torch_tile, torch_tile._C as C
src = os.path.realpath(sys.argv[1])
assert os.path.realpath(C.__file__).startswith(src + os.sep), f"imported {C.__file__}, not the sanitized copy"
needed = open(C.__file__, "rb").read()
assert b"libasan.so" in needed and b"__ubsan_handle" in needed, f"{C.__file__} is not built with ASan/UBSan"
print(f"sanitize: using {C.__file__} (ASan + UBSan)")
EOF
if [ $# -gt 0 ]; then tests=("$@"); else tests=(tests/test_cpu_*.py); fi
# --capture=sys: pytest captures Python's sys.stdout/stderr only, so what the sanitizers write to
# file descriptor 2 reaches $LOGS/pytest.log even when the process aborts (UBSan built together
# with ASan ignores log_path and always writes to stderr).
set +e
"${san_env[@]}" "$PY" -m pytest "${tests[@]}" -q -rs -p no:cacheprovider --capture=sys 2>&1 | tee "$LOGS/pytest.log"
status=${PIPESTATUS[0]}
set -e

# 5. Any report fails the run, whichever process made it. Test subprocesses inherit the settings:
# their ASan reports land in $LOGS too; a UBSan report of theirs goes to the stderr their test
# captures, and its exit status (87) fails a test that checks it.
if grep -q -E "runtime error: |ERROR: (Address|UndefinedBehavior)Sanitizer" "$LOGS/pytest.log"; then
  grep -A 40 -E "runtime error: |ERROR: (Address|UndefinedBehavior)Sanitizer" "$LOGS/pytest.log" > "$LOGS/ubsan.stderr"
fi
report
if [ $status != 0 ]; then
  echo "sanitize: FAILED: pytest exited with $status (no sanitizer report in $LOGS)" >&2
  exit "$status"
fi
echo "sanitize: OK: tests passed with ASan + UBSan, no reports (reports would be in $LOGS)" >&2
