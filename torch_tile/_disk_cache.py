"""The persistent cache: compiled variants (and kernel analyses) on disk, shared
by every process that uses the same directory.

Entries are content-addressed: the file name is a SHA-256 over everything the
result depends on (torch_tile's and Triton's versions, the kernel's source and
dependencies as Triton's own ``cache_key`` hashes them, the specialization,
the launch options and the target). An entry is one file, written atomically
(temporary file + rename) and checksummed; it holds its own key, JSON metadata
and the binary, never a pickle. What is loaded is only ever what was written
for that key: a truncated or corrupted entry is reported once, deleted and
rebuilt; an entry whose recorded key is not the one asked for (a file copied
or moved to another entry's name), or that the caller's ``validate`` rejects
(launch metadata that does not fit its cubin), is reported and rebuilt, never
returned; an entry of an older format is a plain miss. Writers of the same
entry take a file lock, so N processes starting at once compile it once.

A missing directory is created (mode 0700); one that cannot be created or
written makes the cache memory-only, with one warning. A directory that other
users can write to is not trusted (loading a cubin is running code): it is
ignored with a warning unless ``TORCH_TILE_CACHE_TRUST_SHARED=1``. Inside it,
the cache follows no symbolic link: a subdirectory or entry that is a link, a
subdirectory or entry not owned by this user or writable by others (unless
shared directories are trusted) and an entry that is not a regular file (a
directory, a FIFO) are reported and not used: the variant is compiled instead
and nothing is written through a link.

The directory is bounded (least recently used entries are evicted beyond
``max_bytes``, from ``TORCH_TILE_CACHE_MAX_BYTES``: see ``parse_bytes``; never
the entry just written; see ``evict`` for entries dated in the future). A
process scans the directory once, at its first write, then adds what it writes
to that estimate and scans (and evicts) again only when the estimate passes the
bound; what other processes wrote meanwhile is counted at that scan.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import getpass
import hashlib
import json
import os
import re
import stat
import tempfile
import threading
import time
import warnings
from fractions import Fraction
from typing import Any, Callable, Iterator, Optional

from . import _process_locks

FORMAT = b"torch_tile-cache-2"  # 2: the entry records its key
FORMAT_FAMILY = b"torch_tile-cache-"  # entries of other versions of the format are misses
ENTRY_SUFFIX = ".entry"
DEFAULT_MAX_BYTES = 2 << 30
MAX_BYTES_VARIABLE = "TORCH_TILE_CACHE_MAX_BYTES"

# Byte-count suffixes (case-insensitive): SI for K/M/G/T and KB/MB/GB/TB, IEC for KiB/MiB/GiB/TiB.
_BYTE_UNITS = {"": 1, "b": 1}
for _i, _prefix in enumerate("kmgt", start=1):
    _BYTE_UNITS.update({_prefix: 1000**_i, _prefix + "b": 1000**_i, _prefix + "ib": 1024**_i})

# Validates an entry: returns why it cannot be used (None or "": it can) or raises.
Validator = Callable[[dict, bytes], Optional[str]]


def default_directory() -> str:
    """``$TORCH_TILE_CACHE_DIR``, else ``~/.cache/torch_tile``. Without a home directory (HOME unset and no
    passwd entry for the user, as in containers run under an unnamed uid), a private directory in the
    temporary directory, where torch keeps its own caches (``torchinductor_<user>``): ``torch_tile_<user>``."""
    configured = os.environ.get("TORCH_TILE_CACHE_DIR")
    if configured:
        return configured
    home = os.path.expanduser("~")
    if os.path.isabs(home):
        return os.path.join(home, ".cache", "torch_tile")
    try:
        user = getpass.getuser()
    except (KeyError, OSError, ImportError):  # no name for the uid (KeyError before Python 3.13)
        user = f"uid_{os.getuid()}"
    directory = os.path.join(tempfile.gettempdir(), "torch_tile_" + re.sub(r'[\\/:*?"<>|]', "_", user))
    _warn_no_home(directory)
    return directory


@functools.lru_cache(maxsize=None)
def _warn_no_home(directory: str) -> None:
    """Says once per process where the cache went for lack of a home directory."""
    warnings.warn(f"torch_tile cache: no home directory (HOME is unset and the user has no passwd entry); "
                  f"compiled kernels are kept in {directory}. Set TORCH_TILE_CACHE_DIR to choose the directory",
                  RuntimeWarning, stacklevel=4)


def parse_bytes(text: str, variable: str = MAX_BYTES_VARIABLE) -> int:
    """A byte count: a plain integer, or a number with a suffix. K, M, G, T (and KB,
    MB, GB, TB) are powers of 1000; KiB, MiB, GiB, TiB powers of 1024; case is
    ignored (``2GiB``, ``1.5 gb``, ``500M``). Raises ValueError naming ``variable``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([a-zA-Z]*)\s*", text)
    unit = _BYTE_UNITS.get(match.group(2).lower()) if match else None
    if unit is None:
        raise ValueError(f"{variable}={text!r} is not a byte count (an integer, optionally with a suffix: "
                         "K/M/G/T or KB/MB/GB/TB for powers of 1000, KiB/MiB/GiB/TiB for powers of 1024)")
    return int(Fraction(match.group(1)) * unit)


def default_max_bytes() -> int:
    text = os.environ.get(MAX_BYTES_VARIABLE)
    return DEFAULT_MAX_BYTES if text is None else parse_bytes(text)


def content_key(*parts: Any) -> str:
    """SHA-256 (hex) of JSON-serialisable parts."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class _OlderFormat(Exception):
    """An entry written by another version of the format: a miss, not an error."""


class DiskCache:
    def __init__(self, directory: Optional[str] = None, max_bytes: Optional[int] = None):
        self.directory = os.path.abspath(directory or default_directory())
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        self._warned: set[str] = set()
        self._lock = _process_locks.lock()
        self._trust_shared = os.environ.get("TORCH_TILE_CACHE_TRUST_SHARED") == "1"
        self._estimated_bytes: Optional[int] = None  # the directory's size as this process knows it
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
        if self._untrusted(os.stat(self.directory)) is not None and not self._trust_shared:
            self._warn_once("trust", f"{self.directory} can be written by other users, and a cached cubin is code "
                                     "that runs on your GPU: not using it. Use a private directory, or set "
                                     "TORCH_TILE_CACHE_TRUST_SHARED=1 if you trust everyone who can write there")
            return False
        return True

    @staticmethod
    def _untrusted(st: os.stat_result) -> Optional[str]:
        """Why a file or directory could hold what another user wrote (None: it cannot)."""
        if st.st_uid != os.getuid():
            return f"is owned by user {st.st_uid}"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return "can be written by other users"
        return None

    def _distrusted(self, st: os.stat_result) -> Optional[str]:
        """Why a file or subdirectory in the cache is not used (None: it is); links are refused before."""
        return None if self._trust_shared else self._untrusted(st)

    def _refuse(self, path: str, why: str) -> None:
        self._warn_once(f"refused:{path}", f"{path} {why}: not used (a cached cubin is code; the cache follows no "
                                           "link and reads only its own files); compiling instead")

    def _subdirectory(self, key: str) -> str:
        return os.path.join(self.directory, key[:2])

    def _path(self, key: str) -> str:
        return os.path.join(self._subdirectory(key), key + ENTRY_SUFFIX)

    @contextlib.contextmanager
    def _open_subdirectory(self, key: str, create: bool) -> Iterator[Optional[int]]:
        """A descriptor of the key's subdirectory, which every entry operation goes
        through (so nothing is resolved twice); None when it is absent or refused."""
        path = self._subdirectory(key)
        if create:
            try:
                os.makedirs(path, 0o700, exist_ok=True)
            except FileExistsError:
                pass  # a link or a file: refused below
            except OSError as e:
                self._warn_once("write", f"cannot create {path} ({e.strerror}); this process keeps its kernels in "
                                         "memory")
                yield None
                return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            yield None
            return
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                self._refuse(path, "is a symbolic link" if os.path.islink(path) else "is not a directory")
            else:
                self._warn_once("read", f"cannot open {path} ({e.strerror}); compiling instead")
            yield None
            return
        try:
            why = self._distrusted(os.fstat(fd))
            if why is not None:
                self._refuse(path, why)
            yield None if why is not None else fd
        finally:
            os.close(fd)

    # -- entries --------------------------------------------------------------------------------------
    @staticmethod
    def _encode(key: str, meta: dict, blob: bytes) -> bytes:
        header = {"key": key, "meta": meta, "blob_size": len(blob)}
        body = json.dumps(header, sort_keys=True).encode() + b"\n" + blob
        return FORMAT + b" " + hashlib.sha256(body).hexdigest().encode() + b"\n" + body

    @staticmethod
    def _decode(data: bytes) -> tuple[str, dict, bytes]:
        """(recorded key, metadata, blob); raises _OlderFormat, or ValueError when damaged."""
        first, _, body = data.partition(b"\n")
        magic, _, digest = first.partition(b" ")
        if magic != FORMAT and magic.startswith(FORMAT_FAMILY):
            raise _OlderFormat
        if magic != FORMAT or hashlib.sha256(body).hexdigest().encode() != digest:
            raise ValueError("bad format or checksum")
        header_line, _, blob = body.partition(b"\n")
        header = json.loads(header_line)
        if not isinstance(header, dict) or not isinstance(header.get("key"), str) \
                or not isinstance(header.get("meta"), dict) or header.get("blob_size") != len(blob):
            raise ValueError("truncated or malformed header")
        return header["key"], header["meta"], blob

    def _read_entry(self, key: str) -> Optional[bytes]:
        """The entry file's bytes, read without following links (its use time is
        updated: evicted last); None when absent or refused."""
        path = self._path(key)
        with self._open_subdirectory(key, create=False) as dir_fd:
            if dir_fd is None:
                return None
            try:
                # O_NONBLOCK: a FIFO planted as an entry must not block the open.
                fd = os.open(os.path.basename(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=dir_fd)
            except FileNotFoundError:
                return None
            except OSError as e:
                if e.errno == errno.ELOOP:
                    self._refuse(path, "is a symbolic link")
                else:
                    self._warn_once("read", f"cannot read {path} ({e.strerror}); compiling instead")
                return None
            try:
                st = os.fstat(fd)
                why = self._distrusted(st) if stat.S_ISREG(st.st_mode) else "is not a regular file"
            except OSError as e:
                why = f"cannot be read ({e.strerror})"
            if why is not None:  # checked before os.fdopen, which raises for a directory
                os.close(fd)
                self._refuse(path, why)
                return None
            with os.fdopen(fd, "rb") as f:
                data = f.read()
                with contextlib.suppress(OSError):
                    os.utime(fd)
                return data

    def load(self, key: str, validate: Optional[Validator] = None) -> Optional[tuple[dict, bytes]]:
        """The entry's (metadata, blob), or None when absent or unusable: damaged,
        written for another key, of an older format, or rejected by ``validate``."""
        if not self.usable:
            return None
        data = self._read_entry(key)
        if data is None:
            return None
        path = self._path(key)
        try:
            recorded_key, meta, blob = self._decode(data)
        except _OlderFormat:
            return None
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            self._warn_once("corrupt", f"{path} is corrupted or truncated; it is rebuilt (further bad entries "
                                       "are rebuilt silently)")
            self._remove(key)
            return None
        if recorded_key != key:
            self._warn_once(f"key:{path}", f"{path} holds the entry of another key ({recorded_key[:16]}...), "
                                           "copied or moved there; it is not loaded but rebuilt")
            return None
        problem = self._problem(validate, meta, blob)
        if problem:
            self._warn_once(f"invalid:{path}:{problem}", f"{path} cannot be used ({problem}); it is rebuilt")
            return None
        return meta, blob

    def _remove(self, key: str) -> None:
        with self._open_subdirectory(key, create=False) as dir_fd:
            if dir_fd is not None:
                with contextlib.suppress(OSError):
                    os.unlink(key + ENTRY_SUFFIX, dir_fd=dir_fd)

    @staticmethod
    def _problem(validate: Optional[Validator], meta: dict, blob: bytes) -> Optional[str]:
        if validate is None:
            return None
        try:
            return validate(meta, blob) or None
        except Exception as e:  # noqa: BLE001 - any failure to validate means the entry is not used
            return f"{type(e).__name__}: {e}"

    def store(self, key: str, meta: dict, blob: bytes = b"") -> None:
        """Writes an entry atomically; on any error (disk full...) nothing is left behind."""
        if not self.usable:
            return
        path = self._path(key)
        data = self._encode(key, meta, blob)
        with self._open_subdirectory(key, create=True) as dir_fd:
            if dir_fd is None:
                return
            tmp = f".tmp-{os.urandom(8).hex()}"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                             dir_fd=dir_fd)
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                    os.replace(tmp, os.path.basename(path), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                    tmp = None
                finally:
                    if tmp is not None:
                        with contextlib.suppress(OSError):
                            os.unlink(tmp, dir_fd=dir_fd)
            except OSError as e:
                self._warn_once("write", f"cannot write {path} ({e.strerror}); this process keeps its kernels in "
                                         "memory")
                return
        self._account(len(data), path)

    def _account(self, written: int, path: str) -> None:
        """Adds the write of ``path`` to the size estimate; scans and evicts only past the bound."""
        with self._lock:
            known = self._estimated_bytes
            if known is not None:
                self._estimated_bytes = known + written
        if known is None or known + written > self.max_bytes:
            self.evict(keep=path)  # the first write scans once; the scan sets the estimate

    @contextlib.contextmanager
    def writer_lock(self, key: str) -> Iterator[None]:
        """Held while one process builds an entry; others wait, then load it."""
        if not self.usable:
            yield
            return
        with self._open_subdirectory(key, create=True) as dir_fd:
            fd = None
            if dir_fd is not None:
                with contextlib.suppress(OSError):
                    fd = os.open(key + ".lock", os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                                 dir_fd=dir_fd)
            if fd is None:
                yield  # cannot lock: at worst, several processes compile
                return
            with _writer_locks_lock:
                _writer_locks[fd] = threading.get_ident()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)  # not left to close: a forked child may share the descriptor
            finally:
                with _writer_locks_lock:
                    del _writer_locks[fd]
                os.close(fd)

    def get_or_build(self, key: str, build: Callable[[], tuple[dict, bytes]],
                     validate: Optional[Validator] = None) -> tuple[dict, bytes]:
        """The entry for ``key``; ``build()`` -> (meta, blob) makes it on a miss, once
        across processes. A loaded entry that ``validate(meta, blob)`` rejects (it
        raises, or returns a reason) is reported and rebuilt, never returned."""
        hit = self.load(key, validate)
        if hit is not None:
            return hit
        with self.writer_lock(key):
            hit = self.load(key, validate)
            if hit is not None:
                return hit
            meta, blob = build()
            self.store(key, meta, blob)
            return meta, blob

    # -- the directory ---------------------------------------------------------------------------------
    def entries(self) -> list[tuple[str, int, float]]:
        """(path, bytes, last use) of every entry (links are listed, not followed; a directory with an
        entry's name is not an entry)."""
        found = []
        if not os.path.isdir(self.directory):
            return found
        for sub in os.scandir(self.directory):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for e in os.scandir(sub.path):
                if e.name.endswith(ENTRY_SUFFIX) and not e.is_dir(follow_symlinks=False):
                    with contextlib.suppress(FileNotFoundError):
                        st = e.stat(follow_symlinks=False)
                        found.append((e.path, st.st_size, st.st_mtime))
        return found

    def evict(self, keep: Optional[str] = None) -> int:
        """Removes least recently used entries until the total fits ``max_bytes``, never the entry ``keep``
        (the one just written); returns how many. An entry last used in the future (clock skew, a copied
        cache) is re-dated to now: kept as the newest forever, it would have every new entry evicted in
        its place, and compiled again by the next process."""
        now = time.time()
        entries = []
        for path, size, used in self.entries():
            if used > now:
                with contextlib.suppress(OSError):
                    os.utime(path, (now, now), follow_symlinks=False)
            entries.append((path, size, min(used, now)))
        total = sum(size for _, size, _ in entries)
        removed = 0
        for path, size, _ in sorted(entries, key=lambda e: e[2]):
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path[: -len(ENTRY_SUFFIX)] + ".lock")
            total -= size
        with self._lock:
            self._estimated_bytes = total
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
            if sub.is_dir(follow_symlinks=False):
                for e in os.scandir(sub.path):
                    if e.name.endswith(".lock") or e.name.startswith(".tmp-"):
                        with contextlib.suppress(OSError):
                            os.unlink(e.path)
        with self._lock:
            self._estimated_bytes = 0
        return len(entries)


# Descriptors of held writer locks, by the thread holding each. A flock belongs to the open file, which a
# forked child shares: the child's copy of another thread's descriptor would keep the lock after the parent
# released it, so the child closes those.
_writer_locks: dict[int, int] = {}
_writer_locks_lock = _process_locks.lock()


@_process_locks.after_fork_in_child
def _close_other_threads_writer_locks() -> None:
    forking_thread = threading.get_ident()
    for fd, holder in list(_writer_locks.items()):
        if holder != forking_thread:
            with contextlib.suppress(OSError):
                os.close(fd)
            del _writer_locks[fd]


_active: Optional[DiskCache] = None
_active_lock = _process_locks.lock()


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
