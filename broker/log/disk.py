"""Every write the broker makes under its data directory, and that directory's health.

One layer for writes: segment appends, truncations and fsyncs, index files,
``.txnindex`` appends, producer snapshots, topic records, checkpoints. Each
goes through a function here, and ``LogDir.failed`` is the one place an
``OSError`` (ENOSPC, EIO, EROFS, EDQUOT...) becomes the storage state and
Kafka's answer, KAFKA_STORAGE_ERROR; the callers map it further where Kafka
does (the coordinators answer NOT_COORDINATOR for a failed append).

The state change is logged once, when the directory starts failing and when
it accepts writes again, never once per request; the metrics show it as
Kafka's ``OfflineLogDirectoryCount`` gauge.

Deliberate deviation: Kafka takes a log directory offline on the first
IOException (LogDirFailureChannel, LogManager.handleLogDirFailure) and, once
no directory is left, halts the broker ("Shutdown broker because all log dirs
in ... have failed", Exit.halt(1)): with one directory a full disk stops it
until an operator frees space and restarts it. Weir, one process with one directory, keeps
serving reads, answers writes with KAFKA_STORAGE_ERROR and still attempts
each of them: the first one that succeeds (space freed, disk remounted
read-write) brings the directory back, with no restart. A write that failed
part-way is cut back, so a segment stays a sequence of whole batches.

Test hook: with ``WEIR_FAULTS_FILE`` set in the environment (tests only),
each write first reads that file (when it was replaced) for lines
``<ERRNO NAME> <glob>`` and fails a write whose path matches, as the disk
would; a failing data write first writes half its bytes (a torn write). ``fill()`` does the
same with ENOSPC for a whole data directory (broker/faults.py's ``disk_full()``).
"""

from __future__ import annotations

import ctypes
import errno
import fnmatch
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from weir.protocol.errors import Errors, KafkaError

log = logging.getLogger(__name__)

_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)


class LogDir:
    """The health of one data directory: failing since when, and why."""

    def __init__(self, root: str):
        self.root = root
        self.failed_since: float | None = None  # time.time() of the first failure of this spell
        self.error = ""
        self.failed_writes = 0  # in this spell
        self.failures_total = 0

    @property
    def offline(self) -> bool:
        return self.failed_since is not None

    def failed(self, exc: OSError, what: str) -> KafkaError:
        """Record a failed write; the answer Kafka gives for it."""
        self.failures_total += 1
        self.failed_writes += 1
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        if exc.errno in _OUT_OF_DESCRIPTORS:
            # Not the disk: the process's descriptor budget. Logged each time, it names a setting.
            log.error("%s: out of file descriptors (%s); raise the open files limit (ulimit -n) "
                      "or lower weir.max.open.segment.files / max.broker.partitions", what, exc)
        elif self.failed_since is None:
            self.failed_since = time.time()
            self.error = f"{what}: {reason}"
            log.error("data directory %s: writes are failing (%s); answering KAFKA_STORAGE_ERROR to writes, "
                      "reads go on, writes resume by themselves once the disk accepts them", self.root, self.error)
        return KafkaError(Errors.KAFKA_STORAGE_ERROR, f"{what}: {reason}")

    def succeeded(self) -> None:
        if self.failed_since is not None:
            log.warning("data directory %s: writes succeed again after %d failed write(s) in %.1f s; "
                        "resuming", self.root, self.failed_writes, time.time() - self.failed_since)
            self.failed_since = None
            self.error = ""
            self.failed_writes = 0


_dirs: dict[str, LogDir] = {}
_UNREGISTERED = LogDir("(unregistered)")


def register(root: Path) -> LogDir:
    """The ``LogDir`` for a data directory (one per directory, however often asked)."""
    key = os.path.abspath(root)
    found = _dirs.get(key)
    if found is None:
        found = _dirs[key] = LogDir(key)
    return found


def log_dir_of(path) -> LogDir:
    """The registered data directory holding ``path`` (the longest that does)."""
    path = os.path.abspath(path)
    best = _UNREGISTERED
    for root, state in _dirs.items():
        if (path == root or path.startswith(root + os.sep)) and len(root) > len(best.root):
            best = state
    return best


def failed(path, exc: OSError, what: str) -> KafkaError:
    return log_dir_of(path).failed(exc, what)


def succeeded(path) -> None:
    state = log_dir_of(path)
    if state.failed_since is not None:
        state.succeeded()


# ---------------------------------------------------------------- test-only fault injection

class Faults:
    """Rules ``<ERRNO NAME> <glob>`` read from a file, reread when its mtime changes."""

    def __init__(self, rules_file: str):
        self.rules_file = rules_file
        self._stamp: tuple[int, int, int] | None = None
        self.rules: list[tuple[int, str]] = []

    def error_for(self, path: str) -> OSError | None:
        try:
            found = os.stat(self.rules_file)
            stamp = (found.st_ino, found.st_mtime_ns, found.st_size)  # tests replace it: a new inode
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._stamp = stamp
            self.rules = []
            if stamp is not None:
                with open(self.rules_file) as rules:
                    for line in rules:
                        if line.strip():
                            name, pattern = line.split(None, 1)
                            self.rules.append((getattr(errno, name), pattern.strip()))
        for code, pattern in self.rules:
            if fnmatch.fnmatch(path, pattern):
                return OSError(code, os.strerror(code) + " (injected)", path)
        return None


_faults: Faults | None = Faults(os.environ["WEIR_FAULTS_FILE"]) if os.environ.get("WEIR_FAULTS_FILE") else None


_filled: set[str] = set()  # data directories broker/faults.py's disk_full() filled


def fill(root, full: bool) -> None:
    """Tests (broker/faults.py): while ``full``, every write under ``root`` fails with ENOSPC here,
    where a full disk's writes fail, so everything after is the real path."""
    key = os.path.abspath(root)
    if full:
        _filled.add(key)
    else:
        _filled.discard(key)


def _injected(path) -> OSError | None:
    if _filled:
        where = os.path.abspath(path)
        if any(where == root or where.startswith(root + os.sep) for root in _filled):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + " (injected: disk_full)", where)
    return None if _faults is None else _faults.error_for(os.fspath(path))


# ---------------------------------------------------------------- segment files (descriptors kept open)

def open_file(path: str, flags: int = os.O_RDWR | os.O_CREAT) -> int:
    try:
        if flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR) and (fault := _injected(path)) is not None:
            raise fault
        return os.open(path, flags, 0o644)
    except OSError as exc:
        raise failed(path, exc, f"cannot open {path}") from None


def write_at(fd: int, path: str, chunks, size: int, position: int, state: LogDir | None = None) -> None:
    """Write ``size`` bytes of ``chunks`` at ``position``, all or nothing: a failure cuts back
    whatever part reached the file. Safe in a worker thread (it touches only the file).
    ``state``: the file's ``LogDir``, if the caller keeps it (the append path does)."""
    try:
        fault = _injected(path)
        if fault is not None:
            os.pwrite(fd, b"".join(chunks)[:size // 2], position)  # torn, as a full disk tears it
            raise fault
        written = os.pwritev(fd, chunks, position)
        if written != size:  # a full disk: the kernel wrote what fitted
            raise OSError(errno.ENOSPC, f"short write: {written} of {size} bytes", path)
    except OSError as exc:
        try:
            os.ftruncate(fd, position)
        except OSError as cut:
            # The file keeps a torn tail past the segment's size: the next write overwrites it,
            # and recovery at start-up cuts what no write did (it checks every CRC of the tail).
            log.error("cannot cut the torn write back in %s: %s", path, cut)
        raise (state or log_dir_of(path)).failed(exc, f"cannot write {path}") from None
    if state is None:
        succeeded(path)
    elif state.failed_since is not None:
        state.succeeded()


def truncate(fd: int, path: str, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError as exc:
        raise failed(path, exc, f"cannot truncate {path}") from None


def fsync(fd: int, path: str) -> None:
    try:
        if (fault := _injected(path)) is not None:
            raise fault
        os.fsync(fd)
    except OSError as exc:
        raise failed(path, exc, f"cannot fsync {path}") from None


# ---------------------------------------------------------------- whole small files

def sync_filesystem(directory: Path) -> None:
    """Make every write to the filesystem holding ``directory`` durable: one ``syncfs(2)``, one
    journal commit and device flush for all of them, where an fsync per file pays that per file
    (a clean shutdown of thousands of written partitions). Without syncfs (not Linux), ``sync()``."""
    try:
        if (fault := _injected(directory)) is not None:
            raise fault
        if _syncfs is None:
            os.sync()
            return
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if _syncfs(fd) != 0:
                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code))
        finally:
            os.close(fd)
    except OSError as exc:
        raise failed(directory, exc, f"cannot sync the filesystem of {directory}") from None


def syncfs_is_durable(directory: Path) -> bool:
    """Whether ``sync_filesystem`` makes the writes under ``directory`` durable. Not on FUSE (sshfs,
    the test suite's power-loss filesystem): the kernel forwards each file's fsync to the daemon, but
    not a syncfs (only virtiofs takes that), so there each file is fsynced instead. Nor where the
    filesystem cannot be told (no /proc): fsyncs are right everywhere, only slower."""
    kind = _filesystem_type(Path(directory))
    return kind is not None and kind not in ("fuse", "fuseblk") and not kind.startswith("fuse.")


def _filesystem_type(directory: Path) -> str | None:
    """The type of the filesystem ``directory`` is on, from the longest mount point above it."""
    try:
        target = os.path.realpath(directory)
        with open("/proc/self/mountinfo") as mounts:
            best, kind = "", None
            for line in mounts:
                fields = line.split()
                mount_point = fields[4].replace("\\040", " ")
                inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
                if inside and len(mount_point) >= len(best):
                    best, kind = mount_point, fields[fields.index("-") + 1]
            return kind
    except (OSError, ValueError, IndexError):
        return None


def _load_syncfs() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs: Callable[[int], int] = libc.syncfs
    except (OSError, AttributeError):
        return None
    return syncfs


_syncfs = _load_syncfs()


def fsync_directory(directory) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise failed(directory, exc, f"cannot fsync directory {directory}") from None


def replace_durably(path, data: bytes, *, sync_directory: bool = True) -> None:
    """Replace ``path`` with ``data`` so a crash or power loss leaves the old or the new
    contents: temporary file, fsync, rename, fsync of the directory (the rename itself
    survives), as Kafka writes its checkpoint files. A failure removes the temporary file."""
    path = os.fspath(path)
    tmp = path + ".tmp"
    try:
        if (fault := _injected(path)) is not None:
            raise fault
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise failed(path, exc, f"cannot write {path}") from None
    if sync_directory:
        fsync_directory(os.path.dirname(path) or ".")
    succeeded(path)


def replace_file(path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (temporary file, rename) without fsync: for files whose loss
    or tear at a power cut only costs time (a snapshot the next start checks and can do without)."""
    path = os.fspath(path)
    write_file(path + ".tmp", data)
    try:
        os.replace(path + ".tmp", path)
    except OSError as exc:
        raise failed(path, exc, f"cannot write {path}") from None


def write_file(path, data: bytes) -> None:
    """Write a whole file without the durability dance (files whose loss start-up repairs)."""
    path = os.fspath(path)
    try:
        if (fault := _injected(path)) is not None:
            raise fault
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    except OSError as exc:
        raise failed(path, exc, f"cannot write {path}") from None
    succeeded(path)


def append_file(path, data: bytes, *, truncate_first: bool = False) -> None:
    """Append ``data`` to ``path`` (created if missing), or replace its contents; a failure
    cuts back what part reached the file."""
    path = os.fspath(path)
    fd = None
    start = 0
    try:
        if (fault := _injected(path)) is not None:
            raise fault
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate_first else 0), 0o644)
        start = os.lseek(fd, 0, os.SEEK_END)
        _write_all(fd, data, start)
    except OSError as exc:
        if fd is not None:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass
        raise failed(path, exc, f"cannot write {path}") from None
    finally:
        if fd is not None:
            os.close(fd)
    succeeded(path)


def _write_all(fd: int, data: bytes, position: int | None = None) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view) if position is None else os.pwrite(fd, view, position)
        if written <= 0:
            raise OSError(errno.ENOSPC, "no progress writing", None)
        view = view[written:]
        if position is not None:
            position += written
