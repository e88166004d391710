"""Aborted transactions of one segment (Kafka's ``.txnindex``).

Only aborted transactions are recorded, one fixed 34-byte entry each:
version int16 (0), producer id, first offset (the transaction's first data
offset), last offset (the ABORT marker's offset) and the last stable offset
right after the abort. Read_committed fetches list the entries overlapping the
returned range so clients can drop the aborted batches. The file is created
on the first abort, as Kafka does, and is small enough to hold in memory.
Aborts are rare next to appends, so each is written by opening, appending and
closing the file: the index holds no file descriptor between aborts.
"""

from __future__ import annotations

import logging
import os
import struct
from typing import NamedTuple

import construct as c

from weir.protocol.errors import KafkaError

from . import disk

TxnIndexEntry = c.Struct(  # the declaration; the hot path uses ENTRY below
    "version" / c.Int16sb,
    "producer_id" / c.Int64sb,
    "first_offset" / c.Int64sb,
    "last_offset" / c.Int64sb,
    "last_stable_offset" / c.Int64sb,
)
log = logging.getLogger(__name__)

ENTRY = struct.Struct(">hqqqq")
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: str):
        self.path = path
        self.entries: list[AbortedTxn] = []
        self._unsynced = False
        self._unwritten = False  # an append failed to reach the file: rewrite it whole on flush

    def load(self) -> list[AbortedTxn]:
        """Read the entries on disk; a torn last entry (crash mid-write) is cut off."""
        try:
            with open(self.path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return self.entries
        whole = len(data) - len(data) % ENTRY.size
        self.entries = [AbortedTxn(*fields[1:]) for fields in ENTRY.iter_unpack(data[:whole])]
        if whole != len(data):
            os.truncate(self.path, whole)
        return self.entries

    def append(self, entry: AbortedTxn) -> None:
        """Record an abort: in memory first (read_committed fetches must name it whatever
        happens to the file), then on disk; a failed write is retried by ``flush``."""
        self.entries.append(entry)
        if self._unwritten:
            return
        try:
            self._write(ENTRY.pack(VERSION, *entry))
        except KafkaError:  # logged by the disk layer
            self._unwritten = True

    def _write(self, data: bytes, *, replace: bool = False) -> None:
        disk.append_file(self.path, data, truncate_first=replace)
        self._unsynced = True

    def truncate_from(self, offset: int) -> None:
        """Forget aborts whose marker is at or past ``offset`` (they will be replayed).

        Entries are in marker order, so those kept are a prefix and the file is cut to it in place,
        as Kafka's TransactionIndex.truncateTo does: a crash leaves the old file or the prefix. A
        rewrite opened with O_TRUNC could leave an empty index, and a restart would no longer know
        the aborts before its producer snapshot (their data would show to read_committed)."""
        kept = [entry for entry in self.entries if entry.last_offset < offset]
        if len(kept) == len(self.entries):
            return
        prefix = kept == self.entries[:len(kept)]
        self.entries = kept
        if self._unwritten or not prefix:  # the file does not hold them as a prefix: write it whole
            self._rewrite()
        elif not kept:
            self.delete()
        else:
            try:
                os.truncate(self.path, len(kept) * ENTRY.size)
            except FileNotFoundError:
                self._rewrite()
            except OSError as exc:
                self._unwritten = True  # the next flush writes it whole
                raise disk.failed(self.path, exc, f"cannot truncate {self.path}") from None
            self._unsynced = True

    def _rewrite(self) -> None:
        if self.entries:
            self._write(b"".join(ENTRY.pack(VERSION, *entry) for entry in self.entries), replace=True)
        else:
            self.delete()
        self._unwritten = False

    @property
    def unsynced(self) -> bool:
        """Written (or due a rewrite) since its last fsync."""
        return self._unsynced or self._unwritten

    def flush(self) -> None:
        """On the event loop: rewrite the file if an append failed to reach it, then fsync."""
        if self._unwritten:
            self._rewrite()  # a failure (KAFKA_STORAGE_ERROR) leaves it unwritten for the next flush
        self.fsync()

    def fsync(self) -> None:
        """Push what was written to the disk (any descriptor of a file flushes all its data);
        pure I/O, safe in a worker thread."""
        if not self._unsynced:
            return
        _fsync_path(self.path)
        self._unsynced = False

    def take_unsynced(self) -> str | None:
        """On the event loop, for an fsync in a worker thread (a restart point's): the file's path
        if it was written since its last fsync (rewritten first if an append failed), counted as
        synced from now on; ``sync_failed`` undoes that."""
        if self._unwritten:
            self._rewrite()  # a failure (KAFKA_STORAGE_ERROR) leaves it unwritten
        if not self._unsynced:
            return None
        self._unsynced = False
        return self.path

    def sync_failed(self, _exc: KafkaError | None = None) -> None:
        self._unsynced = True

    def delete(self) -> None:
        self._unsynced = False
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def fsync_file(path: str) -> None:
    """fsync a ``.txnindex`` by its path: pure I/O, safe in a worker thread. One its segment's
    deletion removed meanwhile has nothing left to sync (and is no failure of the disk)."""
    if os.path.exists(path):
        _fsync_path(path)


def _fsync_path(path: str) -> None:
    fd = disk.open_file(path, os.O_RDONLY)
    try:
        disk.fsync(fd, path)
    finally:
        os.close(fd)
