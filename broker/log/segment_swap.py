"""A cleaned segment's files, and replacing old segments with it safely across a crash.

The steps follow Kafka's: the cleaner writes ``<base>.log.cleaned`` and its
three indexes and fsyncs them (``CleanedSegmentWriter``); ``install`` renames
them ``.cleaned`` -> ``.swap`` (indexes first: a complete ``.log.swap`` is the
commit point), renames the replaced segments' files to ``.deleted``, renames
the ``.swap`` files into place and finally deletes the ``.deleted`` ones.

``recover``, run when a partition opens, finishes or undoes whatever a crash
interrupted: ``.cleaned`` files and index ``.swap`` files without a
``.log.swap`` are an unfinished clean and go; a ``.log.swap`` is a committed
one, so the segments its offset range covers are deleted and it is renamed
into place; ``.deleted`` files go. A cleaned segment ends exactly where the
segments it replaces ended (the compactor keeps each group's last batch), so
the ``.swap`` file alone says which segments it replaces.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from weir.protocol import records as rec

from .index import OFFSET_ENTRY, TIME_ENTRY
from .segment import Segment, segment_name
from .txn_index import ENTRY as TXN_ENTRY, VERSION as TXN_VERSION, AbortedTxn

log = logging.getLogger(__name__)

CLEANED = ".cleaned"
SWAP = ".swap"
DELETED = ".deleted"
SEGMENT_SUFFIXES = (".index", ".timeindex", ".txnindex", ".log")  # the log last: it commits a swap
WRITE_CHUNK = 1024 * 1024


def segment_path(directory: Path, base_offset: int, suffix: str, state: str = "") -> Path:
    return directory / (segment_name(base_offset) + suffix + state)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class CleanedSegmentWriter:
    """Writes ``<base>.log.cleaned`` and its three indexes (all four, the transaction index
    even when empty, so that a swap replaces every file of the segment it lands on)."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int):
        self.directory = directory
        self.base_offset = base_offset
        self.paths = {suffix: segment_path(directory, base_offset, suffix, CLEANED) for suffix in SEGMENT_SUFFIXES}
        self._log = open(self.paths[".log"], "wb")
        self._buffer = bytearray()
        self._offset_index = bytearray()
        self._time_index = bytearray()
        self._interval = index_interval_bytes
        self._size = 0
        self._since_index = 0
        self._max_timestamp = -1
        self._last_base = -1

    def append(self, batch) -> None:
        """Index entries as ``Segment`` makes them on append."""
        header = rec.read_header(batch)
        relative = header.base_offset - self.base_offset
        if self._since_index >= self._interval or not self._offset_index:
            self._offset_index += OFFSET_ENTRY.pack(relative, self._size)
            self._since_index = 0
        self._since_index += header.size
        if header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp
            if not self._time_index or self._since_index == header.size:
                self._time_index += TIME_ENTRY.pack(header.max_timestamp, relative)
        self._last_base = header.base_offset
        self._buffer += batch
        self._size += header.size
        if len(self._buffer) >= WRITE_CHUNK:
            self._log.write(self._buffer)
            self._buffer.clear()

    def finish(self, aborted: list[AbortedTxn]) -> None:
        """Write and fsync every file; the final max timestamp goes into the time index, as on seal."""
        if self._max_timestamp >= 0:
            last_timestamp, _ = TIME_ENTRY.unpack_from(self._time_index, len(self._time_index) - TIME_ENTRY.size)
            if last_timestamp < self._max_timestamp:
                self._time_index += TIME_ENTRY.pack(self._max_timestamp, self._last_base - self.base_offset)
        self._log.write(self._buffer)
        self._log.flush()
        os.fsync(self._log.fileno())
        self._log.close()
        txn_index = b"".join(TXN_ENTRY.pack(TXN_VERSION, *entry) for entry in aborted)
        for suffix, data in ((".index", self._offset_index), (".timeindex", self._time_index),
                             (".txnindex", txn_index)):
            with open(self.paths[suffix], "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())

    def discard(self) -> None:
        if not self._log.closed:
            self._log.close()
        for path in self.paths.values():
            _unlink(path)


def discard_cleaned(directory: Path, base_offset: int) -> None:
    for suffix in SEGMENT_SUFFIXES:
        _unlink(segment_path(directory, base_offset, suffix, CLEANED))


def _segment_files(segment: Segment) -> list[Path]:
    return [segment_path(segment.directory, segment.base_offset, suffix) for suffix in SEGMENT_SUFFIXES]


def install(directory: Path, base_offset: int, replaced: list[Segment]) -> None:
    """Put the cleaned segment at ``base_offset`` in place of ``replaced`` (files only; the
    partition swaps its Segment objects). Each rename is atomic; ``recover`` completes or
    undoes the sequence wherever a crash stops it."""
    for suffix in SEGMENT_SUFFIXES:  # the .log last: from its rename on, the swap is committed
        os.rename(segment_path(directory, base_offset, suffix, CLEANED),
                  segment_path(directory, base_offset, suffix, SWAP))
    _fsync_directory(directory)
    deleted = []
    for segment in replaced:
        for path in _segment_files(segment):
            if path.exists():
                target = path.with_name(path.name + DELETED)
                os.rename(path, target)
                deleted.append(target)
    for suffix in SEGMENT_SUFFIXES:
        os.rename(segment_path(directory, base_offset, suffix, SWAP), segment_path(directory, base_offset, suffix))
    _fsync_directory(directory)
    for path in deleted:
        _unlink(path)


def _swap_end(path: Path) -> int | None:
    """The offset after the last batch of a ``.log.swap`` file; None when it holds none."""
    end = None
    with open(path, "rb") as source:
        data = source.read()
    for _position, header in rec.iter_headers(data):
        end = header.last_offset + 1
    return end


def recover(directory: Path) -> None:
    """Finish or discard a swap a crash interrupted (see the module docstring)."""
    names = os.listdir(directory)
    if not any(name.endswith((CLEANED, SWAP, DELETED)) for name in names):
        return
    for name in names:
        if name.endswith(CLEANED) or name.endswith(DELETED):
            _unlink(directory / name)
    swaps = sorted(name for name in names if name.endswith(SWAP))
    committed = {name.split(".")[0] for name in swaps if name.endswith(".log" + SWAP)}
    for name in swaps:
        if name.split(".")[0] not in committed:
            log.info("%s: discarding %s of an unfinished clean", directory, name)
            _unlink(directory / name)
    for stem in sorted(committed):
        base = int(stem)
        end = _swap_end(segment_path(directory, base, ".log", SWAP))
        live = sorted(int(p.name.split(".")[0]) for p in directory.glob("*.log") if p.name.split(".")[0].isdigit())
        for other in live:
            if base < other and (end is None or other < end):
                for suffix in SEGMENT_SUFFIXES:
                    _unlink(segment_path(directory, other, suffix))
        for suffix in SEGMENT_SUFFIXES:
            swap = segment_path(directory, base, suffix, SWAP)
            if swap.exists():
                os.replace(swap, segment_path(directory, base, suffix))
        log.info("%s: completed the swap of cleaned segment %d interrupted by a crash", directory, base)
    _fsync_directory(directory)
