"""Per-partition state of idempotent and transactional producers.

For each producer id the partition keeps its epoch and the metadata of its
last five batches (Kafka's NUM_BATCHES_TO_RETAIN, matching max.in.flight 5),
which is what lets a retried batch be recognised and answered with its original
offset instead of being written twice. The rules and their order follow
Kafka's ``ProducerAppendInfo`` (PROTOCOL.md 4.1). A producer's first
transactional batch opens a transaction on the partition (``ongoing``: producer
id -> first offset, which gives the last stable offset); its COMMIT or ABORT
marker closes it.

State survives a crash as a snapshot (written on segment roll, clean
shutdown and periodically: restart_points.py) plus a replay of the batches
after it.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import construct as c
import crc32c

from weir.protocol.errors import Errors, KafkaError
from weir.protocol.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, BatchHeader, increment_sequence

from . import disk

BATCHES_TO_RETAIN = 5
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOTS_KEPT = 2


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == 0x7FFFFFFF)


class ProducerStateManager:
    def __init__(self, directory: Path):
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.snapshot_offset = -1  # the newest snapshot written or loaded
        # State changed since that snapshot: a clean shutdown writes one only then. Batches without a
        # producer id leave it unchanged; the next start replays their headers from the snapshot on
        # (at most a segment's worth: a roll writes a snapshot).
        self.unsnapshotted = False
        self.batches_since_snapshot = 0  # producer batches applied since (restart_points.py paces on it)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    # ------------------------------------------------------------ validation

    def check_client_batch(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a produced batch; return the original batch when it is a duplicate.

        Raises KafkaError(INVALID_PRODUCER_EPOCH / OUT_OF_ORDER_SEQUENCE_NUMBER /
        INVALID_TXN_STATE).
        """
        entry = self.producers.get(header.producer_id)
        if entry is None or entry.epoch == NO_PRODUCER_EPOCH:
            return None  # unknown producer (new, or expired): any sequence is accepted
        epoch = header.producer_epoch
        if epoch == entry.epoch:
            duplicate = entry.find_duplicate(header.base_sequence, header.last_sequence)
            if duplicate is not None:
                return duplicate
        if epoch < entry.epoch:
            raise KafkaError(Errors.INVALID_PRODUCER_EPOCH,
                             f"epoch {epoch} is older than the current epoch {entry.epoch}")
        if not header.is_transactional and entry.current_txn_first_offset >= 0:
            raise KafkaError(Errors.INVALID_TXN_STATE,
                             "a non-transactional write while this producer has an open transaction here")
        if epoch != entry.epoch:
            if header.base_sequence != 0:
                raise KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"new epoch {epoch} must start at sequence 0, got {header.base_sequence}")
        elif not _in_sequence(entry.last_seq, header.base_sequence):
            raise KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"expected sequence {increment_sequence(entry.last_seq, 1)}, "
                             f"got {header.base_sequence}")
        return None

    # ------------------------------------------------------------ updates

    def record_batch(self, header: BatchHeader, base_offset: int) -> None:
        """Apply an appended data batch (live append and log replay alike)."""
        self.unsnapshotted = True
        self.batches_since_snapshot += 1
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerEntry()
        if header.producer_epoch != entry.epoch:
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        if header.base_sequence != NO_SEQUENCE:
            entry.batches.append(BatchMetadata(
                header.base_sequence, header.last_sequence, base_offset + header.last_offset_delta,
                header.last_offset_delta, header.max_timestamp))
        entry.last_timestamp = header.max_timestamp
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = base_offset
            self.ongoing[header.producer_id] = base_offset

    def has_open_txn(self, producer_id: int, epoch: int) -> bool:
        """An open transaction here of this producer at this epoch (another epoch is verified anew)."""
        return producer_id in self.ongoing and self.producers[producer_id].epoch == epoch

    def check_epoch(self, producer_id: int, epoch: int) -> None:
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.epoch:
            raise KafkaError(Errors.INVALID_PRODUCER_EPOCH,
                             f"epoch {epoch} is older than the current epoch {entry.epoch}")

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> None:
        """A marker may not come from an older producer epoch or an older coordinator."""
        self.check_epoch(producer_id, epoch)
        entry = self.producers.get(producer_id)
        if entry is not None and coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(Errors.TRANSACTION_COORDINATOR_FENCED,
                             f"coordinator epoch {coordinator_epoch} < {entry.coordinator_epoch}")

    def record_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, timestamp: int) -> int | None:
        """Apply a COMMIT/ABORT marker; the first offset of the transaction it closed, if any."""
        self.unsnapshotted = True
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry()
        if epoch != entry.epoch:  # a fencing abort carries a bumped epoch: older batches are void
            entry.epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = -1
        self.ongoing.pop(producer_id, None)
        return first if first >= 0 else None

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Drop producers idle past ``producer.id.expiration.ms`` with no open transaction."""
        stale = [pid for pid, entry in self.producers.items()
                 if entry.current_txn_first_offset < 0 and entry.last_timestamp + expiration_ms < now_ms]
        for pid in stale:
            del self.producers[pid]
        if stale:
            self.unsnapshotted = True
        return len(stale)

    # ------------------------------------------------------------ snapshots

    def snapshot_path(self, offset: int) -> Path:
        return self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        return sorted(int(p.name[:-len(SNAPSHOT_SUFFIX)]) for p in self.directory.glob("*" + SNAPSHOT_SUFFIX)
                      if p.name[:-len(SNAPSHOT_SUFFIX)].isdigit())

    def encode_snapshot(self) -> bytes:
        """The state as a snapshot file's bytes (``SnapshotFile``), packed with ``struct``: a
        clean shutdown encodes thousands, and building them with construct cost ~0.5 ms each."""
        body = bytearray(_COUNT.pack(len(self.producers)))
        for pid, e in self.producers.items():
            body += _ENTRY.pack(pid, e.epoch, e.last_timestamp, e.coordinator_epoch, e.current_txn_first_offset,
                                len(e.batches))
            for b in e.batches:
                body += _BATCH.pack(b.first_seq, b.last_seq, b.last_offset, b.offset_delta, b.timestamp)
        return _FILE_HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + body

    def write_snapshot(self, offset: int) -> None:
        """Persist the state as of log end ``offset`` (tmp file, fsync, rename): a roll's and a
        clean close's (periodic ones are restart_points.py's, without fsync)."""
        disk.replace_durably(self.snapshot_path(offset), self.encode_snapshot(), sync_directory=False)
        self.snapshot_taken(offset)
        self.remove_old_snapshots()

    def remove_old_snapshots(self, keep: int = SNAPSHOTS_KEPT) -> None:
        """Only the newest ``keep`` snapshot files stay. Reads only the directory: safe in the
        worker thread that writes a periodic snapshot."""
        for old in self.snapshot_offsets()[:-keep]:
            self.snapshot_path(old).unlink(missing_ok=True)

    def snapshot_taken(self, offset: int) -> None:
        """The state as of ``offset`` is saved (a file, or the shutdown checkpoint)."""
        self.snapshot_offset = offset
        self.unsnapshotted = False
        self.batches_since_snapshot = 0

    def load_snapshot(self, max_offset: int) -> int:
        """Load the newest valid snapshot at or below ``max_offset``; its offset, or -1."""
        for offset in reversed(self.snapshot_offsets()):
            path = self.snapshot_path(offset)
            if offset > max_offset:
                path.unlink(missing_ok=True)  # describes data that no longer exists
                continue
            if not self.load_encoded(path.read_bytes(), offset):
                path.unlink(missing_ok=True)
                continue
            return offset
        self.producers = {}
        self.ongoing = {}
        self.unsnapshotted = False
        return -1

    def load_encoded(self, data: bytes, offset: int) -> bool:
        """Take the state a snapshot's bytes hold, as of ``offset``; False (state untouched)
        when they are torn or corrupt."""
        try:
            parsed = SnapshotFile.parse(data)
            if crc32c.crc32c(parsed.body) != parsed.crc:
                raise ValueError("crc mismatch")
            body = SnapshotBody.parse(parsed.body)
        except (c.ConstructError, ValueError):
            return False
        self.producers = {}
        self.ongoing = {}
        for item in body.entries:
            entry = ProducerEntry(item.epoch, deque(maxlen=BATCHES_TO_RETAIN), item.last_timestamp,
                                  item.coordinator_epoch, item.current_txn_first_offset)
            entry.batches.extend(BatchMetadata(b.first_seq, b.last_seq, b.last_offset, b.offset_delta,
                                               b.timestamp) for b in item.batches)
            self.producers[item.producer_id] = entry
            if entry.current_txn_first_offset >= 0:
                self.ongoing[item.producer_id] = entry.current_txn_first_offset
        self.snapshot_taken(offset)
        return True


SnapshotBatch = c.Struct(
    "first_seq" / c.Int32sb,
    "last_seq" / c.Int32sb,
    "last_offset" / c.Int64sb,
    "offset_delta" / c.Int32sb,
    "timestamp" / c.Int64sb,
)

SnapshotEntry = c.Struct(
    "producer_id" / c.Int64sb,
    "epoch" / c.Int16sb,
    "last_timestamp" / c.Int64sb,
    "coordinator_epoch" / c.Int32sb,
    "current_txn_first_offset" / c.Int64sb,
    "batches" / c.PrefixedArray(c.Int8ub, SnapshotBatch),
)

SnapshotBody = c.Struct("entries" / c.PrefixedArray(c.Int32ub, SnapshotEntry))

SnapshotFile = c.Struct(
    "version" / c.Int16sb,
    "crc" / c.Int32ub,
    "body" / c.GreedyBytes,
)

# The same layout for ``encode_snapshot``.
SNAPSHOT_VERSION = 1
_FILE_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">I")
_ENTRY = struct.Struct(">qhqiqB")
_BATCH = struct.Struct(">iiqiq")
