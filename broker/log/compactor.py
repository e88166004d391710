"""One compaction pass over a partition's cleanable segments (Kafka's ``Cleaner``).

Pure file work, run in the cleaner's child process (``cleaner_process``): it
reads sealed segments (nothing appends to them) through descriptors the broker
opened, and writes each group of them, cleaned, as ``.cleaned`` files next to
them. It touches no broker object, so the plan and the result cross a pipe.
Installing those files is ``segment_swap``'s job, on the event loop; choosing
what to clean is ``cleaner``'s.

What a pass keeps, as Kafka's cleaner does:

- the offset map holds, for every key in the dirty range [first dirty, end),
  the offset of its latest record; a record below ``end`` survives only if it
  is that latest one (or its key is not in the map, i.e. not overwritten since);
- a tombstone survives until its batch's delete horizon (KIP-534): the first
  pass that keeps a tombstone or an emptied transaction's marker stamps
  ``now + delete.retention.ms`` into the batch's base timestamp (attribute bit
  6), so the horizon survives restarts; a later pass past it drops them;
- records of aborted transactions go; an ABORT marker stays while any batch of
  its transaction was seen this pass, a COMMIT marker while any batch of its
  transaction was seen, and both go once that is no longer so and their
  horizon has passed;
- the last batch of each active producer is kept (emptied if need be) so its
  epoch and sequence survive; the last batch of each group is kept too (see
  ``_retention``);
- a batch left whole is copied as stored; one that lost records is rebuilt
  with its original offsets, producer fields and compression, and a new CRC.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from weir.protocol import records as rec

from .segment_swap import CleanedSegmentWriter
from .txn_index import AbortedTxn

READ_CHUNK = 4 * 1024 * 1024
MAX_RELATIVE_OFFSET = 2**31 - 1  # index entries hold offsets relative to the segment base as int32
# Kafka sizes its offset map as dedupe buffer / (16-byte MD5 + 8-byte offset) slots, filled to 90%
# (log.cleaner.io.buffer.load.factor). We count entries the same way; a Python dict entry with
# its key costs more memory than 24 bytes, so the setting bounds the entry count, not bytes.
MAP_ENTRY_BYTES = 24
MAP_LOAD_FACTOR = 0.9


class CleaningAborted(Exception):
    """The broker is stopping; the pass leaves only ``.cleaned`` files, which start-up deletes."""


@dataclass
class LastRecord:
    """What must survive of one active producer: its last data batch, or, when its last
    entry is a marker that changed the epoch, its markers of the current epoch."""
    last_data_offset: int | None
    epoch: int


class StopSignal(Protocol):
    """What a pass polls between batches: a ``threading.Event``, or the child's abort check."""
    def is_set(self) -> bool: ...


@dataclass(slots=True)
class SegmentFile:
    """A sealed segment as a pass reads it: an open descriptor (the broker's, pinned for the
    pass; in the child process, a copy passed over the pipe) and what the broker knows of it."""
    base_offset: int
    size: int
    next_offset: int
    fd: int

    def read(self, position: int, length: int) -> bytes:
        return os.pread(self.fd, length, position)


@dataclass
class CleaningPlan:
    directory: Path
    segments: list[SegmentFile]  # sealed, contiguous, from the log start to the first uncleanable one
    first_dirty: int
    first_uncleanable: int  # a segment base: only whole segments are cleaned
    aborted: list[AbortedTxn]  # every aborted transaction those segments index
    producer_epochs: dict[int, int]  # active producers (not expired) -> current epoch
    now_ms: int
    delete_retention_ms: int
    segment_bytes: int
    index_interval_bytes: int
    map_capacity: int


@dataclass
class CleanedGroup:
    replaced: list[int]  # base offsets of the segments it replaces
    base_offset: int


@dataclass
class CleaningStats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0
    map_records: int = 0


@dataclass
class CleaningResult:
    groups: list[CleanedGroup]
    end_offset: int  # the next pass starts its dirty range here
    stats: CleaningStats = field(default_factory=CleaningStats)


def iter_batches(segment: SegmentFile, start: int = 0) -> Iterator[tuple[rec.BatchHeader, memoryview]]:
    """(header, raw bytes) of each batch of a sealed segment, read in large chunks."""
    position, end = start, segment.size
    while position < end:
        chunk = segment.read(position, min(READ_CHUNK, end - position))
        consumed = 0
        for offset, header in rec.iter_headers(chunk):
            yield header, memoryview(chunk)[offset:offset + header.size]
            consumed = offset + header.size
        if consumed == 0:  # one batch larger than the chunk: read it alone
            if len(chunk) < rec.HEADER_SIZE:
                return
            header = rec.read_header(chunk)
            raw = segment.read(position, header.size) if header.batch_length >= rec.MIN_BATCH_LENGTH else b""
            if len(raw) < max(header.size, rec.HEADER_SIZE):
                return  # a sealed segment has no torn tail; stop rather than loop
            yield header, memoryview(raw)
            consumed = header.size
        position += consumed


# --------------------------------------------------------------------------- transactions


class TxnTracker:
    """Which batches belong to aborted transactions, and which markers may go (Kafka's
    ``CleanedTransactionMetadata``); walked once over the log in offset order."""

    def __init__(self, aborted: list[AbortedTxn]):
        self._upcoming = sorted(aborted, key=lambda txn: txn.first_offset)
        self._next = 0
        self._committed: set[int] = set()  # producers with a batch seen in a committed txn
        self._aborted: dict[int, list[Any]] = {}  # producer -> [AbortedTxn, last batch offset seen or None]
        self.cleaned_index: list[AbortedTxn] = []  # aborts the cleaned segment still indexes

    def _reach(self, offset: int) -> None:
        while self._next < len(self._upcoming) and self._upcoming[self._next].first_offset <= offset:
            txn = self._upcoming[self._next]
            self._aborted.setdefault(txn.producer_id, [txn, None])
            self._next += 1

    def on_data(self, header: rec.BatchHeader) -> bool:
        """True when the batch belongs to an aborted transaction."""
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        aborted = self._aborted.get(header.producer_id)
        if aborted is not None:
            aborted[1] = header.last_offset
            return True
        self._committed.add(header.producer_id)
        return False

    def on_marker(self, header: rec.BatchHeader, kind: int | None) -> bool:
        """True when no batch of the marker's transaction was seen: the marker may go."""
        self._reach(header.last_offset)
        if kind is None:
            return True  # an emptied marker: its transaction was cleaned away already
        if kind == rec.CONTROL_ABORT:
            aborted = self._aborted.pop(header.producer_id, None)
            if aborted is not None and aborted[1] is not None:
                self.cleaned_index.append(aborted[0])
                return False
            return True
        if kind == rec.CONTROL_COMMIT:
            seen = header.producer_id in self._committed
            self._committed.discard(header.producer_id)
            return not seen
        return False


# --------------------------------------------------------------------------- the pass


class Retention(enum.Enum):
    DELETE = 1  # drop the batch whole
    DELETE_EMPTY = 2  # filter its records; drop it if none are left
    RETAIN_EMPTY = 3  # filter its records; keep its header even if none are left


class Compactor:
    def __init__(self, plan: CleaningPlan, stop: StopSignal):
        self.plan = plan
        self.stop = stop
        self.stats = CleaningStats()
        self.offset_map: dict[bytes, int] = {}
        self.latest_offset = plan.first_dirty - 1

    def run(self) -> CleaningResult:
        plan = self.plan
        last_records = self._last_records()
        self._build_offset_map()
        end_offset = self.latest_offset + 1
        groups = group_segments([s for s in plan.segments if s.base_offset < end_offset], plan.segment_bytes)
        tracker = TxnTracker(plan.aborted)
        cleaned = []
        for group, group_end in groups:
            cleaned.append(self._clean_group(group, group_end, tracker, last_records))
        return CleaningResult(cleaned, end_offset, self.stats)

    def _check_stop(self) -> None:
        """Between batches: stop if asked."""
        if self.stop.is_set():
            raise CleaningAborted()

    def _last_records(self) -> dict[int, LastRecord]:
        """For each active producer, what its last batch in the cleanable range is (headers only)."""
        found: dict[int, LastRecord] = {}
        for segment in self.plan.segments:
            for header, _raw in iter_batches(segment):
                self._check_stop()
                if header.producer_id < 0 or header.producer_id not in self.plan.producer_epochs:
                    continue
                last = found.get(header.producer_id)
                if last is None or last.epoch != header.producer_epoch:
                    last = found[header.producer_id] = LastRecord(None, header.producer_epoch)
                if not header.is_control:
                    last.last_data_offset = header.last_offset
        for producer_id, last in found.items():  # a later epoch fenced what came before
            if last.epoch != self.plan.producer_epochs[producer_id]:
                last.last_data_offset, last.epoch = None, self.plan.producer_epochs[producer_id]
        return found

    def _build_offset_map(self) -> None:
        plan = self.plan
        tracker = TxnTracker(plan.aborted)
        for segment in plan.segments:
            next_base = self._next_base(segment)
            if next_base <= plan.first_dirty:
                continue
            for header, raw in iter_batches(segment):
                self._check_stop()
                if header.last_offset < plan.first_dirty:
                    continue
                if header.is_control:
                    tracker.on_marker(header, _marker_kind(raw))
                elif not tracker.on_data(header):
                    _, records = rec.decode_batch(raw)
                    if len(self.offset_map) + len(records) > plan.map_capacity and self.offset_map:
                        return  # full: this pass cleans up to the last mapped batch
                    for record in records:
                        if record.key is not None and record.offset >= plan.first_dirty:
                            self.offset_map[record.key] = record.offset
                    self.stats.map_records += len(records)
                self.latest_offset = max(self.latest_offset, header.last_offset)
            self.latest_offset = max(self.latest_offset, next_base - 1)  # gaps belong to the segment

    def _next_base(self, segment: SegmentFile) -> int:
        segments = self.plan.segments
        i = segments.index(segment)
        return segments[i + 1].base_offset if i + 1 < len(segments) else self.plan.first_uncleanable

    def _clean_group(self, group: list[SegmentFile], group_end: int, tracker: TxnTracker,
                     last_records: dict[int, LastRecord]) -> CleanedGroup:
        writer = CleanedSegmentWriter(self.plan.directory, group[0].base_offset, self.plan.index_interval_bytes)
        tracker.cleaned_index = []
        try:
            for segment in group:
                for header, raw in iter_batches(segment):
                    self._check_stop()
                    self.stats.bytes_read += header.size
                    kept = self._filter(header, raw, tracker, last_records, group_end)
                    if kept is not None:
                        writer.append(kept)
                        self.stats.bytes_written += len(kept)
            writer.finish(tracker.cleaned_index)
        except BaseException:
            writer.discard()
            raise
        return CleanedGroup([segment.base_offset for segment in group], group[0].base_offset)

    def _retention(self, header: rec.BatchHeader, discard_records: bool,
                   last_records: dict[int, LastRecord], group_end: int) -> Retention:
        last = last_records.get(header.producer_id) if header.producer_id >= 0 else None
        if last is not None and (header.last_offset == last.last_data_offset if last.last_data_offset is not None
                                 else header.is_control and header.producer_epoch == last.epoch):
            return Retention.RETAIN_EMPTY
        if header.last_offset + 1 == group_end:
            # Kafka keeps the last batch of a pass; we keep the last of each group, so a cleaned
            # segment ends where the segments it replaces ended: crash recovery of a half-done
            # swap reads from the .swap file which segments it replaces.
            return Retention.RETAIN_EMPTY
        return Retention.DELETE if discard_records else Retention.DELETE_EMPTY

    def _filter(self, header: rec.BatchHeader, raw: memoryview, tracker: TxnTracker,
                last_records: dict[int, LastRecord], group_end: int) -> bytes | memoryview | None:
        now = self.plan.now_ms
        horizon = rec.delete_horizon_ms(header)
        if header.is_control:
            can_discard = tracker.on_marker(header, _marker_kind(raw))
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = discard_records = tracker.on_data(header)
        retention = self._retention(header, discard_records, last_records, group_end)
        self.stats.records_read += header.records_count
        if retention is Retention.DELETE:
            return None
        records: list[rec.Record]
        kept: list[rec.Record]
        if discard_records or header.records_count == 0:
            records, kept = [], []
        else:
            _, records = rec.decode_batch(raw)
            kept = records if header.is_control else [r for r in records if self._keep(r, horizon)]
        self.stats.records_written += len(kept)
        if kept:
            has_tombstone = any(r.value is None for r in kept) if not header.is_control else False
            needs_horizon = (has_tombstone or (can_discard and header.is_control)) and horizon is None
            if len(kept) == len(records) and not needs_horizon:
                return raw  # untouched: copied as stored
            new_horizon = now + self.plan.delete_retention_ms if needs_horizon else horizon
            return rec.rebuild_compacted_batch(header, kept, new_horizon)
        if retention is Retention.RETAIN_EMPTY:
            return raw if header.records_count == 0 else rec.rebuild_compacted_batch(header, [])
        return None

    def _keep(self, record: rec.Record, horizon: int | None) -> bool:
        if record.offset > self.latest_offset:
            return True
        if record.key is None:
            return False  # a compacted topic drops keyless records, as Kafka does
        if record.offset < self.offset_map.get(record.key, -1):
            return False
        return record.value is not None or horizon is None or self.plan.now_ms < horizon


def _marker_kind(raw: memoryview) -> int | None:
    _header, records = rec.decode_batch(raw)
    if not records:
        return None
    kind, _coordinator_epoch = rec.decode_control_record(records[0])
    return kind


def group_segments(segments: list[SegmentFile], max_bytes: int) -> list[tuple[list[SegmentFile], int]]:
    """Consecutive segments whose cleaned output fits one segment (Kafka's ``groupSegmentsBySize``):
    total size at most ``max_bytes`` and offsets within an int32 of the first base. Each group
    comes with its end, the base of the segment after it."""
    groups = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        j = i + 1
        while j < len(segments) and size + segments[j].size <= max_bytes \
                and _segment_end(segments, j) - group[0].base_offset <= MAX_RELATIVE_OFFSET:
            group.append(segments[j])
            size += segments[j].size
            j += 1
        groups.append((group, _segment_end(segments, j - 1)))
        i = j
    return groups


def _segment_end(segments: list[SegmentFile], i: int) -> int:
    return segments[i + 1].base_offset if i + 1 < len(segments) else segments[i].next_offset
