"""torch_tile's persistent kernel cache: where it is, what it holds, clearing it.

    python -m torch_tile.cache info     # directory, entries, bytes, limit
    python -m torch_tile.cache clear    # delete every entry

The directory is ``$TORCH_TILE_CACHE_DIR`` (default ``~/.cache/torch_tile``);
its size is bounded by ``$TORCH_TILE_CACHE_MAX_BYTES`` (default 2 GiB; least
recently used entries are evicted), in bytes or with a suffix: ``2GiB``,
``500MiB`` (powers of 1024), ``2G``, ``500MB`` (powers of 1000). See
``torch_tile/_disk_cache.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional

from . import _disk_cache


def info() -> dict:
    """Directory, whether it is used, entry count, bytes and the size limit."""
    return _disk_cache.active().info()


def clear() -> int:
    """Deletes every entry; returns how many were removed."""
    return _disk_cache.active().clear()


def set_directory(directory: Optional[str], max_bytes: Optional[int] = None) -> None:
    """Uses another cache directory from now on in this process (None: from the environment)."""
    _disk_cache.configure(directory, max_bytes)


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_tile.cache", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("info", "clear"))
    parser.add_argument("--json", action="store_true", help="print info as JSON")
    args = parser.parse_args(argv)
    if args.command == "clear":
        print(f"removed {clear()} entries from {info()['directory']}")
        return 0
    details = info()
    if args.json:
        print(json.dumps(details))
    else:
        print(f"directory  {details['directory']}{'' if details['usable'] else '  (not used: see the warning)'}")
        print(f"entries    {details['entries']}")
        print(f"size       {details['bytes'] / 2**20:.1f} MiB of {details['max_bytes'] / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
