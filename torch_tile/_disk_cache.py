"""The persistent cache: compiled variants (and kernel analyses) on disk, shared
by every process that uses the same directory.

Entries are content-addressed: the file name is a SHA-256 over everything the
result depends on (torch_tile's and Triton's versions, the kernel's source and
dependencies as Triton's own ``cache_key`` hashes them, the specialization,
the launch options and the target). An entry is one file, written atomically
(temporary file + rename) and checksummed; it holds JSON metadata and the
binary, never a pickle. A truncated or corrupted entry is reported once,
deleted and rebuilt, never loaded. Writers of the same entry take a file lock,
so N processes starting at once compile it once. The directory is bounded
(least recently used entries are evicted beyond ``max_bytes``).

A missing directory is created (mode 0700); one that cannot be created or
written makes the cache memory-only, with one warning. A directory that other
users can write to is not trusted (loading a cubin is running code): it is
ignored with a warning unless ``TORCH_TILE_CACHE_TRUST_SHARED=1``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import tempfile
import threading
import warnings
from typing import Any, Iterator, Optional

FORMAT = b"torch_tile-cache-1"
ENTRY_SUFFIX = ".entry"
DEFAULT_MAX_BYTES = 2 << 30


def default_directory() -> str:
    return os.environ.get("TORCH_TILE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "torch_tile")


def default_max_bytes() -> int:
    return int(os.environ.get("TORCH_TILE_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))


def content_key(*parts: Any) -> str:
    """SHA-256 (hex) of JSON-serialisable parts."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class DiskCache:
    def __init__(self, directory: Optional[str] = None, max_bytes: Optional[int] = None):
        self.directory = os.path.abspath(directory or default_directory())
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self.usable = self._prepare()

    # -- set-up -------------------------------------------------------------------------------------
    def _warn_once(self, kind: str, message: str) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        warnings.warn(f"torch_tile cache: {message}", RuntimeWarning, stacklevel=3)

    def _prepare(self) -> bool:
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        except OSError as e:
            self._warn_once("dir", f"cannot create {self.directory} ({e.strerror}); compiled kernels stay in "
                                   "memory only")
            return False
        if not os.access(self.directory, os.W_OK | os.X_OK):
            self._warn_once("dir", f"{self.directory} is not writable; compiled kernels stay in memory only")
            return False
        st = os.stat(self.directory)
        shared = st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if shared and os.environ.get("TORCH_TILE_CACHE_TRUST_SHARED") != "1":
            self._warn_once("trust", f"{self.directory} can be written by other users, and a cached cubin is code "
                                     "that runs on your GPU: not using it. Use a private directory, or set "
                                     "TORCH_TILE_CACHE_TRUST_SHARED=1 if you trust everyone who can write there")
            return False
        return True

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key + ENTRY_SUFFIX)

    # -- entries --------------------------------------------------------------------------------------
    @staticmethod
    def _encode(meta: dict, blob: bytes) -> bytes:
        body = json.dumps({**meta, "blob_size": len(blob)}, sort_keys=True).encode() + b"\n" + blob
        return FORMAT + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body

    @staticmethod
    def _decode(data: bytes) -> tuple[dict, bytes]:
        first, _, body = data.partition(b"\n")
        magic, _, digest = first.partition(b" ")
        if magic != FORMAT or hashlib.sha256(body).hexdigest().encode() != digest:
            raise ValueError("bad format or checksum")
        header, _, blob = body.partition(b"\n")
        meta = json.loads(header)
        if meta.pop("blob_size") != len(blob):
            raise ValueError("truncated")
        return meta, blob

    def load(self, key: str) -> Optional[tuple[dict, bytes]]:
        """The entry's (metadata, blob), or None when absent or unusable."""
        if not self.usable:
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            self._warn_once("read", f"cannot read {path} ({e.strerror}); compiling instead")
            return None
        try:
            meta, blob = self._decode(data)
        except (ValueError, KeyError, UnicodeDecodeError):
            self._warn_once("corrupt", f"{path} is corrupted or truncated; it is rebuilt (further bad entries "
                                       "are rebuilt silently)")
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used: evicted last
        return meta, blob

    def store(self, key: str, meta: dict, blob: bytes = b"") -> None:
        """Writes an entry atomically; on any error (disk full...) nothing is left behind."""
        if not self.usable:
            return
        path = self._path(key)
        tmp = None
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(self._encode(meta, blob))
            os.replace(tmp, path)
            tmp = None
        except OSError as e:
            self._warn_once("write", f"cannot write {path} ({e.strerror}); this process keeps its kernels in memory")
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        self.evict()

    @contextlib.contextmanager
    def writer_lock(self, key: str) -> Iterator[None]:
        """Held while one process builds an entry; others wait, then load it."""
        if not self.usable:
            yield
            return
        path = self._path(key)[: -len(ENTRY_SUFFIX)] + ".lock"
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError:
            yield  # cannot lock: at worst, several processes compile
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def get_or_build(self, key: str, build) -> tuple[dict, bytes]:
        """The entry for ``key``; ``build()`` -> (meta, blob) makes it on a miss, once across processes."""
        hit = self.load(key)
        if hit is not None:
            return hit
        with self.writer_lock(key):
            hit = self.load(key)
            if hit is not None:
                return hit
            meta, blob = build()
            self.store(key, meta, blob)
            return meta, blob

    # -- the directory ---------------------------------------------------------------------------------
    def entries(self) -> list[tuple[str, int, float]]:
        """(path, bytes, last use) of every entry."""
        found = []
        if not os.path.isdir(self.directory):
            return found
        for sub in os.scandir(self.directory):
            if not sub.is_dir():
                continue
            for e in os.scandir(sub.path):
                if e.name.endswith(ENTRY_SUFFIX):
                    with contextlib.suppress(FileNotFoundError):
                        st = e.stat()
                        found.append((e.path, st.st_size, st.st_mtime))
        return found

    def evict(self) -> int:
        """Removes least recently used entries until the total fits ``max_bytes``; returns how many."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        for path, size, _ in sorted(entries, key=lambda e: e[2]):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path[: -len(ENTRY_SUFFIX)] + ".lock")
            total -= size
        return removed

    def info(self) -> dict:
        entries = self.entries()
        return {"directory": self.directory, "usable": self.usable, "entries": len(entries),
                "bytes": sum(size for _, size, _ in entries), "max_bytes": self.max_bytes}

    def clear(self) -> int:
        """Deletes every entry (and lock file); returns the number of entries removed."""
        entries = self.entries()
        for path, _, _ in entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        for sub in os.scandir(self.directory) if os.path.isdir(self.directory) else ():
            if sub.is_dir():
                for e in os.scandir(sub.path):
                    if e.name.endswith(".lock") or e.name.startswith(".tmp-"):
                        with contextlib.suppress(OSError):
                            os.unlink(e.path)
        return len(entries)


_active: Optional[DiskCache] = None
_active_lock = threading.Lock()


def active() -> DiskCache:
    """The process's cache (created from the environment on first use)."""
    global _active
    with _active_lock:
        if _active is None:
            _active = DiskCache()
        return _active


def configure(directory: Optional[str] = None, max_bytes: Optional[int] = None) -> DiskCache:
    """Switches the process to another cache directory (None: from the environment)."""
    global _active
    with _active_lock:
        _active = DiskCache(directory, max_bytes)
        return _active
