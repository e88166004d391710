"""Aborted transactions of one segment (Kafka's ``.txnindex``).

Only aborted transactions are recorded, one fixed 34-byte entry each:
version int16 (0), producer id, first offset (the transaction's first data
offset), last offset (the ABORT marker's offset) and the last stable offset
right after the abort. Read_committed fetches list the entries overlapping the
returned range so clients can drop the aborted batches. The file is created
on the first abort, as Kafka does, and is small enough to hold in memory.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

import construct as c

TxnIndexEntry = c.Struct(  # the declaration; the hot path uses ENTRY below
    "version" / c.Int16sb,
    "producer_id" / c.Int64sb,
    "first_offset" / c.Int64sb,
    "last_offset" / c.Int64sb,
    "last_stable_offset" / c.Int64sb,
)
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
        self._fd: int | None = None

    def load(self) -> list[AbortedTxn]:
        """Read the entries on disk; a torn last entry (crash mid-write) is cut off."""
        try:
            data = open(self.path, "rb").read()
        except FileNotFoundError:
            return self.entries
        whole = len(data) - len(data) % ENTRY.size
        self.entries = [AbortedTxn(*fields[1:]) for fields in ENTRY.iter_unpack(data[:whole])]
        if whole != len(data):
            os.truncate(self.path, whole)
        return self.entries

    def append(self, entry: AbortedTxn) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(self._fd, ENTRY.pack(VERSION, *entry))
        self.entries.append(entry)

    def truncate_from(self, offset: int) -> None:
        """Forget aborts whose marker is at or past ``offset`` (they will be replayed)."""
        kept = [entry for entry in self.entries if entry.last_offset < offset]
        if len(kept) == len(self.entries):
            return
        self.close()
        self.entries = []
        os.unlink(self.path)
        for entry in kept:
            self.append(entry)

    def fsync(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
