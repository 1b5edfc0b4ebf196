#!/usr/bin/env bash
# The main job: set up (if needed), build, and run the demo.
source "$(dirname "$0")/env.sh"
exec "$PY" -m torch_tile.demo "$@"
