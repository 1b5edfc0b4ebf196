#!/usr/bin/env bash
# The test suite: set up (if needed), build, and run pytest (GPU tests skip without a GPU).
source "$(dirname "$0")/env.sh"
exec "$PY" -m pytest tests -q -rs "$@"
