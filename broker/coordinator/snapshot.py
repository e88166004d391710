"""Coordinator snapshots: a restart replays the live state of an internal partition, not its history.

Why snapshots and not only compaction. The log cleaner compacts ``__transaction_state`` and
``__consumer_offsets`` (latest record per key), but as Kafka's does it keeps tombstones and
transaction markers for ``delete.retention.ms`` (a day) after cleaning, so that consumers
reading the topic see them: after 100,000 transactions in a day the offsets topic still holds
100,000 markers, and a replay costing microseconds per record in Python spends seconds on them
(measured: 7 s to serve again after kill -9, 220,000 records replayed). Kafka rebuilds its
coordinators by reading the same history, quickly in Java; to follow the live state rather
than the history, Weir keeps, per partition, what the replay needs and nothing more:

- ``PartitionView`` is the state of one partition as records: for each key its latest
  settled record (a plain record, or a transactional one whose COMMIT marker was written),
  and the records of each producer's still-open transaction. Tombstones, aborted records and
  markers leave nothing. It is what an ideal compaction of the partition would keep, so
  replaying it gives the coordinators the same state as replaying the whole log (the
  coordinators' records are keyed upserts; Kafka's compaction relies on the same property).
  Records keep their offsets and their order, so offset comparisons during replay still hold.
- The view follows every append to the partition (the partition calls it after each write,
  markers included) and is written to ``<offset>.coordinator-snapshot`` in the partition
  directory once as many records were appended since the previous snapshot as the view
  holds (at least ``MIN_INTERVAL``), and at a clean shutdown: writing costs O(live state)
  every O(live state) records, and a restart replays at most about twice the live state per
  partition: the snapshot, then the log from its offset.
- A snapshot is an optimisation, never the truth: written without fsync (a power loss may
  lose or tear it: its CRC32C fails and the log is replayed from further back), ignored when
  its offset is past the log end (the log lost a tail) or below the log start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

from weir.broker.log import disk
from weir.protocol import records as rec
from weir.protocol.errors import KafkaError

log = logging.getLogger(__name__)

SUFFIX = ".coordinator-snapshot"
MIN_INTERVAL = 200  # records appended between two snapshots, at least
_HEAD = struct.Struct(">hIqi")  # version, crc32c of the rest, end offset, entries
_ENTRY = struct.Struct(">qqii")  # offset, producer id (-1: settled), key length, value length (-1: null)
VERSION = 0


@dataclass(slots=True)
class Kept:
    """A record the state still depends on."""
    offset: int
    key: bytes
    value: bytes | None
    producer_id: int  # of an open transaction; -1 for a settled record


class PartitionView:
    def __init__(self):
        self.settled: dict[bytes, Kept] = {}
        self.pending: dict[int, dict[bytes, Kept]] = {}  # producer id -> key -> record
        self.since_snapshot = 0
        self.writing = False

    @property
    def size(self) -> int:
        return len(self.settled) + sum(len(records) for records in self.pending.values())

    def record(self, offset: int, key: bytes | None, value: bytes | None, producer_id: int) -> None:
        """A data record (``producer_id`` -1 unless transactional), as replay applies it."""
        self.since_snapshot += 1
        if key is None:
            return
        if producer_id >= 0:
            records = self.pending.setdefault(producer_id, {})
            if value is None:
                records.pop(key, None)
            else:
                records[key] = Kept(offset, key, value, producer_id)
        elif value is None:
            self.settled.pop(key, None)
        else:
            self.settled[key] = Kept(offset, key, value, -1)

    def marker(self, producer_id: int, commit: bool) -> None:
        """A COMMIT settles the producer's open records (a later settled one of a key wins, as the
        offsets' replay compares record offsets); an ABORT drops them."""
        self.since_snapshot += 1
        records = self.pending.pop(producer_id, None)
        if not commit or not records:
            return
        for key, kept in records.items():
            current = self.settled.get(key)
            if current is None or current.offset < kept.offset:
                self.settled[key] = Kept(kept.offset, key, kept.value, -1)

    def entries(self) -> list[Kept]:
        kept = list(self.settled.values())
        for records in self.pending.values():
            kept.extend(records.values())
        kept.sort(key=lambda entry: entry.offset)
        return kept

    def appended(self, batch: memoryview, header: rec.BatchHeader, base_offset: int) -> None:
        """A batch the partition just wrote at ``base_offset`` (its bytes still say offset 0)."""
        if header.is_control:
            kind, _epoch = rec.read_control_batch(batch)
            self.marker(header.producer_id, kind == rec.CONTROL_COMMIT)
            return
        producer_id = header.producer_id if header.is_transactional else -1
        _header, records = rec.decode_batch(batch, verify_crc=False)
        for record in records:
            self.record(base_offset + record.offset, record.key, record.value, producer_id)

    def due(self) -> bool:
        return not self.writing and self.since_snapshot >= max(MIN_INTERVAL, self.size)


def encode(end_offset: int, kept: list[Kept]) -> bytes:
    body = bytearray(struct.pack(">q", end_offset))
    body += struct.pack(">i", len(kept))
    for entry in kept:
        value = entry.value
        body += _ENTRY.pack(entry.offset, entry.producer_id, len(entry.key), -1 if value is None else len(value))
        body += entry.key
        if value is not None:
            body += value
    return struct.pack(">hI", VERSION, crc32c.crc32c(body)) + bytes(body)


def decode(data: bytes) -> tuple[int, PartitionView] | None:
    """(end offset, view) of a snapshot file's bytes; None when it is torn or unknown."""
    if len(data) < _HEAD.size:
        return None
    version, crc, end_offset, count = _HEAD.unpack_from(data)
    if version != VERSION or crc32c.crc32c(memoryview(data)[6:]) != crc:
        return None
    view = PartitionView()
    position = _HEAD.size
    for _ in range(count):
        offset, producer_id, key_length, value_length = _ENTRY.unpack_from(data, position)
        position += _ENTRY.size
        key = data[position:position + key_length]
        position += key_length
        value = None
        if value_length >= 0:
            value = data[position:position + value_length]
            position += value_length
        kept = Kept(offset, key, value, producer_id)
        if producer_id >= 0:
            view.pending.setdefault(producer_id, {})[key] = kept
        else:
            view.settled[key] = kept
    return end_offset, view


def path_for(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SUFFIX}"


def offsets_in(directory: Path) -> list[int]:
    found = []
    for name in os.listdir(directory):
        if name.endswith(SUFFIX) and name[:-len(SUFFIX)].isdigit():
            found.append(int(name[:-len(SUFFIX)]))
    return sorted(found)


def load(directory: Path, log_start: int, log_end: int) -> tuple[int, PartitionView] | None:
    """The newest usable snapshot of a partition: at or below its log end, at or above its start."""
    for offset in reversed(offsets_in(directory)):
        if offset > log_end:  # the log lost the tail it describes: the log will differ there
            path_for(directory, offset).unlink(missing_ok=True)
            continue
        if offset < log_start:
            continue
        try:
            found = decode(path_for(directory, offset).read_bytes())
        except (OSError, struct.error):
            found = None
        if found is not None and found[0] == offset:
            return found
        log.warning("ignoring the torn coordinator snapshot %s", path_for(directory, offset))
    return None


def write(directory: Path, end_offset: int, data: bytes, keep: int = 2) -> None:
    """Write a snapshot (pure I/O: a worker thread may run it) and remove older ones."""
    disk.write_file(str(path_for(directory, end_offset)) + ".tmp", data)
    os.replace(str(path_for(directory, end_offset)) + ".tmp", path_for(directory, end_offset))
    for old in offsets_in(directory)[:-keep]:
        path_for(directory, old).unlink(missing_ok=True)


class SnapshotKeeper:
    """Attached to an internal partition (``Partition.observer``): keeps its view current and
    writes snapshots when due, in a worker thread, and at a clean shutdown."""

    def __init__(self, partition, view: PartitionView):
        self.partition = partition
        self.view = view

    def appended(self, batch: memoryview, header: rec.BatchHeader, base_offset: int) -> None:
        self.view.appended(batch, header, base_offset)
        if self.view.due():
            self._write_later(base_offset + header.last_offset_delta + 1)

    def _write_later(self, end_offset: int) -> None:
        view = self.view
        view.writing = True
        view.since_snapshot = 0
        kept = view.entries()  # on the loop: a consistent copy of the view at end_offset

        def work() -> None:
            write(self.partition.directory, end_offset, encode(end_offset, kept))

        def done(future: asyncio.Future) -> None:
            view.writing = False
            if future.exception() is not None:  # logged by the disk layer; the next one tries again
                log.debug("coordinator snapshot at %d not written: %s", end_offset, future.exception())

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a tool, a test): write it here
            work()
            view.writing = False
            return
        loop.run_in_executor(None, work).add_done_callback(done)

    def closing(self) -> None:
        """A clean shutdown: snapshot what changed, so the next start replays nothing else."""
        end = self.partition.log_end_offset
        if self.view.since_snapshot and end:
            try:
                write(self.partition.directory, end, encode(end, self.view.entries()))
            except (KafkaError, OSError) as exc:  # the next start replays more, that is all
                log.warning("coordinator snapshot of %s not written at shutdown: %s", self.partition.directory, exc)
            self.view.since_snapshot = 0

