#!/usr/bin/env bash
# The test suite: set up (if needed), build, and run pytest (GPU tests skip without a GPU).
source "$(dirname "$0")/env.sh"
# One pytest process per core where pytest-xdist is installed (.venv has it): the tests are mostly single-threaded
# (TEST_WORKERS=1 runs them in one process).
workers=()
if [ "${TEST_WORKERS:-auto}" != 1 ] && "$PY" -c "import xdist" 2>/dev/null; then
  workers=(-n "${TEST_WORKERS:-auto}")
  echo "torch_tile: running the tests in ${TEST_WORKERS:-$(nproc)} processes (pytest-xdist)" >&2
fi
exec "$PY" -m pytest tests -q -rs "${workers[@]}" "$@"
