"""One topic partition: an ordered list of segments, its offsets and producer state.

On a single node the high watermark equals the log end offset as soon as a
write returns. The produce path checks the 61-byte batch header and the CRC,
walks the records (``validator.py``) and writes the batch as sent, or as the
topic's compression.type / LogAppendTime rewrote it; fetch hands stored
batches back untouched.

Transactions (opening, markers, the aborted ones a fetch names) are
``partition_txns``'s; fetches waiting for an append are ``fetch_waiters``'.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import struct
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from weir.protocol import records as rec
from weir.protocol.errors import Errors, KafkaError

from . import disk, log_start, partition_txns, producer_replay, restart_points, segment_swap
from .fetch_waiters import FetchWaiters
from .open_files import SegmentFiles
from .producer_state import ProducerStateManager
from . import segment_read
from .segment import Segment, SegmentRegion
from .validator import TopicPolicy, ValidatedBatch, check_batch_header, validate_records

log = logging.getLogger(__name__)

# Batches are written on the event loop: into the page cache a write costs less CPU than the hop
# to a worker thread and back (measured: 3 x 330 KiB batches a request, 590 us of CPU written on
# the loop, 1,100-1,470 us through the executor; a 16 KiB batch 56 us against 96 us). But when the
# kernel throttles writers (dirty pages over vm.dirty_ratio) a write blocks, and the loop with it:
# after a write slower than SLOW_WRITE_S, batches of at least OFFLOAD_WRITE_BYTES go through a
# worker thread until OFFLOAD_FOR_S passes, so the loop keeps serving other partitions and fetches.
OFFLOAD_WRITE_BYTES = 128 * 1024
SLOW_WRITE_S = 0.005
OFFLOAD_FOR_S = 5.0
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
LEADER_EPOCH = 0  # one node, never re-elected: the leader epoch is always 0
PRIVATE_OPEN_FILES = 16  # open segment files of a partition made without the broker's budget


@dataclass(slots=True)
class AppendResult:
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


@dataclass(slots=True)
class ReadResult:
    records: bytes | memoryview | SegmentRegion
    high_watermark: int
    log_start_offset: int
    end_offset: int  # just past the last returned batch


class Partition:
    def __init__(self, topic: str, index: int, directory: Path, config: dict[str, Any],
                 files: SegmentFiles | None = None):
        self.topic = topic
        self.index = index
        self.directory = directory
        self.config = config
        # The broker's open-file budget, shared by every partition (a partition alone gets its own).
        self.files = files if files is not None else SegmentFiles(PRIVATE_OPEN_FILES)
        self.segments: list[Segment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.producers = ProducerStateManager(directory)
        self.fetch_waiters = FetchWaiters()  # the fetch handler's, woken by each append
        self._append_lock = asyncio.Lock()  # one append at a time: offsets and producer state stay ordered
        self.unflushed_messages = 0
        self.last_flush_ms = 0
        # A file was created here (a segment, its indexes, a snapshot, a .txnindex) since the last
        # fsync of this directory: a flush fsyncs the directory too, or a power cut can lose the
        # name with the data (Kafka's LocalLog flushes the parent directory after a roll likewise).
        self.directory_unsynced = False
        self.being_cleaned = False  # set by the log cleaner; retention waits for it (Kafka serialises them too)
        self.offload_writes_until = 0.0  # perf_counter time; see OFFLOAD_WRITE_BYTES
        self._name = f"{topic}-{index}"  # as validation errors name the partition
        self._policy: TopicPolicy | None = None  # what validation reads of ``config``; see config_changed
        # Told of every batch written (``appended(batch, header, base_offset)``) and of a clean close
        # (``closing()``): a coordinator's snapshot keeper on an internal topic (coordinator/snapshot.py).
        self.observer: Any = None

    # ------------------------------------------------------------------ offsets

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.producers.first_unstable_offset()
        if first_unstable is None:
            return self.high_watermark
        # An open transaction DeleteRecords cut into holds the LSO at the log start, as in Kafka.
        return max(min(first_unstable, self.high_watermark), self.log_start_offset)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # ------------------------------------------------------------------ opening

    def open(self, verify: bool = True, saved_producers: tuple[int, bytes] | None = None) -> None:
        """Load segments; recover the active one (``verify``: check every CRC); rebuild producer state
        (``saved_producers``: this partition's entry of the shutdown's producer_checkpoint)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        segment_swap.recover(self.directory)  # a clean the last run left half installed
        interval = self.config["index.interval.bytes"]
        bases = sorted(int(p.stem) for p in self.directory.glob("*.log") if p.stem.isdigit())
        for base in bases:
            self._add_segment(Segment(self.directory, base, interval, self.files))
        if not self.segments:  # a new partition: its first .log is created by the first write
            self._add_segment(Segment(self.directory, 0, interval, self.files))
        for segment in self.segments[:-1]:
            segment.load()
        # Only the active segment can have a torn tail. Trusted (same boot), its index checkpoint
        # spares the walk of what it covers.
        if verify or self.active.resume() is None:
            self.active.recover(verify)
        self.log_start_offset = self.segments[0].base_offset
        for segment in self.segments:
            segment.txn_index.load()
        producer_replay.rebuild(self, saved_producers)
        log_start.load(self)

    def _add_segment(self, segment: Segment) -> None:
        self.segments.append(segment)
        self._bases.append(segment.base_offset)

    def replace_segments(self, replaced: list[Segment], cleaned: Segment) -> None:
        """Put a cleaned segment where the consecutive segments ``replaced`` were (the log
        cleaner, under the append lock); the caller closes the replaced ones."""
        first = self.segments.index(replaced[0])
        if self.segments[first:first + len(replaced)] != replaced:
            raise ValueError("replaced segments are not consecutive segments of this partition")
        self.segments[first:first + len(replaced)] = [cleaned]
        self._bases[first:first + len(replaced)] = [cleaned.base_offset]

    def segments_from(self, offset: int) -> list[Segment]:
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        return self.segments[i:]

    # ------------------------------------------------------------------ appending

    def validate_client_batch(self, batch: memoryview, produce_version: int, now_ms: int) -> ValidatedBatch:
        """Kafka's checks of one produced batch, header and CRC, then every record (``validator.py``);
        the batch to store, recompressed or restamped as the topic says."""
        header = check_batch_header(batch, produce_version, self._name, self.config["max.message.bytes"])
        policy = self._policy
        if policy is None:
            policy = self._policy = TopicPolicy.of(self.config)
        return validate_records(batch, header, now_ms, policy, self._name,
                                self.config["max.message.bytes"])

    def config_changed(self) -> None:
        """``config`` was changed in place (AlterConfigs, a broker default): validation rereads it."""
        self._policy = None

    async def append_client_batch(self, batch: memoryview | bytes, header: rec.BatchHeader, now_ms: int,
                                  verify_txn: partition_txns.TxnVerifier | None = None,
                                  log_append_time_ms: int = -1) -> AppendResult:
        """Append a validated batch, or answer a retried one with its original offset.

        A transactional batch that would open a transaction here must first pass
        ``verify_txn`` (the coordinator confirms the partition is in the producer's
        ongoing transaction, KIP-890 part 1); that is what keeps a late or zombie
        write from leaving a transaction no marker will ever close.
        """
        async with self._append_lock:
            if header.is_transactional:  # before the epoch and sequence checks, as Kafka verifies first
                partition_txns.check_start(self.producers, header, verify_txn)
            if header.producer_id >= 0:
                duplicate = self.producers.check_client_batch(header)
                if duplicate is not None:  # Kafka answers a retry with the stored batch's maxTimestamp
                    return AppendResult(duplicate.first_offset, duplicate.timestamp, self.log_start_offset)
            base_offset = await self._write(memoryview(batch), header)
            if header.producer_id >= 0:
                self.producers.record_batch(header, base_offset)
                restart_points.snapshot_producers_if_due(self)
            return AppendResult(base_offset, log_append_time_ms, self.log_start_offset)

    async def append_coordinator_batch(self, batch: memoryview, header: rec.BatchHeader,
                                       verify_txn: partition_txns.TxnVerifier | None = None) -> AppendResult:
        """Append a batch a coordinator built (its own records, or transactional offsets).

        Such batches carry no sequence numbers, so only the producer epoch is
        checked, as Kafka does for appends of coordinator origin.
        """
        async with self._append_lock:
            if header.producer_id >= 0:
                self.producers.check_epoch(header.producer_id, header.producer_epoch)
            if header.is_transactional:
                partition_txns.check_start(self.producers, header, verify_txn)
            base_offset = await self._write(batch, header)
            if header.producer_id >= 0:
                self.producers.record_batch(header, base_offset)
                restart_points.snapshot_producers_if_due(self)
            return AppendResult(base_offset, -1, self.log_start_offset)

    async def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                            commit: bool, now_ms: int) -> int:
        """Write a COMMIT/ABORT control batch closing ``producer_id``'s transaction; its offset.

        Markers are idempotent: one for a producer with no open transaction here
        is written and closes nothing (a coordinator retrying after a restart).
        """
        async with self._append_lock:
            self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
            batch = rec.encode_control_batch(commit=commit, producer_id=producer_id,
                                             producer_epoch=producer_epoch,
                                             coordinator_epoch=coordinator_epoch, timestamp=now_ms)
            header = rec.read_header(batch)
            offset = await self._write(memoryview(batch), header)
            partition_txns.complete(self, self.active, header._replace(base_offset=offset), coordinator_epoch, commit)
            restart_points.snapshot_producers_if_due(self)
            return offset

    async def _write(self, batch: memoryview, header: rec.BatchHeader) -> int:
        size = header.size
        if self.active.size and (self.active.size + size > self.config["segment.bytes"]
                                 or self._segment_ms_passed(header.max_timestamp)):
            self.roll()
        base_offset = self.log_end_offset
        segment = self.active
        if not segment.size:
            self.directory_unsynced = True  # this write creates the segment's file (a roll made more)
        # baseOffset and partitionLeaderEpoch are outside the CRC: restamp them without a copy.
        chunks = (_BASE_OFFSET.pack(base_offset), batch[8:12], _LEADER_EPOCH.pack(LEADER_EPOCH), batch[16:])
        # Real elapsed time, not the injected Clock: this measures the write syscall itself.
        if size >= OFFLOAD_WRITE_BYTES and perf_counter() < self.offload_writes_until:
            position = await segment.write_in_worker(chunks, size)
        else:
            started = perf_counter()
            position = segment.write(chunks, size)
            finished = perf_counter()
            if finished - started > SLOW_WRITE_S:
                self.offload_writes_until = finished + OFFLOAD_FOR_S
        # Only now, back on the loop, does the batch become visible (HW = LEO on one node).
        segment.commit(base_offset, base_offset + header.last_offset_delta, header.max_timestamp, position, size)
        self.unflushed_messages += header.records_count
        if segment.size - segment.checkpointed_size >= restart_points.INDEX_CHECKPOINT_BYTES \
                and segment.offset_index.unwritten >= restart_points.INDEX_CHECKPOINT_ENTRIES:
            restart_points.checkpoint_indexes(self, segment)
        if self.observer is not None:
            self.observer.appended(batch, header, base_offset)
        self.fetch_waiters.wake()
        return base_offset

    def _segment_ms_passed(self, timestamp: int) -> bool:
        """segment.ms: roll once a batch's timestamp is that far past the active segment's
        first batch (Kafka's ``timeWaitedForRoll``; no jitter, one node)."""
        first = self.active.time_index.keys
        return bool(first) and timestamp - first[0] > self.config["segment.ms"]

    async def quiesce(self) -> None:
        """Wait for an append in flight (worker-thread write) to finish."""
        async with self._append_lock:
            pass

    def roll(self) -> None:
        """Seal the active segment and start a new one at the log end.

        A failed write (KAFKA_STORAGE_ERROR) leaves the active segment active: the next
        append rolls again (sealing twice writes the same indexes)."""
        offset = self.log_end_offset
        restart_points.settle(self)  # its queued checkpoint and snapshot land before the files seal
        self.active.seal()
        self.producers.write_snapshot(offset)
        segment = Segment(self.directory, offset, self.config["index.interval.bytes"], self.files)
        segment.next_offset = offset
        self._add_segment(segment)

    def flush(self) -> None:
        for segment in self.segments:
            segment.flush()
        if self.directory_unsynced:
            disk.fsync_directory(self.directory)
            self.directory_unsynced = False
        self.unflushed_messages = 0

    def take_unflushed(self, now_ms: int) -> tuple[list[Segment], Path | None]:
        """Segments written since the last flush, and this directory if it gained a file; their
        flags are cleared here, on the loop, so the caller can fsync them from a worker thread
        (a failed fsync sets a segment's flag again)."""
        dirty = [segment for segment in self.segments if segment.unflushed]
        for segment in dirty:
            segment.unflushed = False
        directory = self.directory if self.directory_unsynced else None
        self.directory_unsynced = False
        self.unflushed_messages = 0
        self.last_flush_ms = now_ms
        return dirty, directory

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int, upper_bound: int | None = None, *,
             min_one: bool = True, by_reference: bool = False) -> ReadResult:
        """Whole batches from the one containing ``offset``, below ``upper_bound`` (default HW).

        With ``min_one`` the first batch is returned even past ``max_bytes`` (KIP-74: the
        first partition of a fetch response that has data); without it only batches that
        fit, possibly none. Deviation: Kafka then sends the bytes that fit, a partial
        batch the client discards; whole batches (or nothing) say the same in fewer bytes.
        ``by_reference``: the records are a ``SegmentRegion`` (sent with sendfile, not read).
        """
        high_watermark = self.high_watermark
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise KafkaError(Errors.OFFSET_OUT_OF_RANGE,
                             f"offset {offset} outside [{self.log_start_offset}, {self.log_end_offset}]")
        bound = high_watermark if upper_bound is None else min(upper_bound, high_watermark)
        data: bytes | memoryview | SegmentRegion = b""
        end_offset = offset
        if offset < bound:
            for segment in self.segments_from(offset):
                found = segment.position_of(offset)
                if found is not None:  # else the offset is past this segment's last batch: the next one
                    read = segment_read.region_of if by_reference else segment_read.read_bytes
                    data, end_offset = read(segment, found, offset, max_bytes, bound, min_one)
                    break
        return ReadResult(data, high_watermark, self.log_start_offset, max(end_offset, offset))

    # ------------------------------------------------------------------ log start (log_start.py decides)

    def drop_oldest_segments(self, count: int) -> None:
        """Delete the ``count`` oldest segments (never the active one); the log start follows."""
        for _ in range(min(count, len(self.segments) - 1)):
            self._bases.pop(0)
            self.segments.pop(0).delete()
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)

    def close(self, *, keep_state: bool = True, sync: bool = True) -> tuple[int, bytes] | None:
        """Release the files; with ``keep_state`` (a clean shutdown) flush and write a producer
        snapshot first. A failed write only costs the next start a longer replay.

        Without ``sync`` (``LogManager.close``) the snapshot is returned, as (offset, bytes), for
        the shutdown's one producer_checkpoint file, and the caller makes it and the segments
        durable afterwards, for every partition at once (one syncfs, not a file creation and an
        fsync per file). Neither needs an fsync of its own: a checkpoint lost or torn by a power
        cut before that sync is dropped by its CRC or its offset past the recovered log end, and
        the start after a power cut (a new boot) verifies the whole log anyway."""
        saved = None
        if keep_state:
            try:
                saved = restart_points.save_at_close(self, sync)
            except KafkaError as exc:
                log.warning("%s: closed without its flush or producer snapshot (%s); the next start "
                            "recovers from the log", self._name, exc.message)
        else:
            restart_points.discard(self)
        for segment in self.segments:
            segment.release()
        return saved

    def delete(self) -> None:
        restart_points.discard(self)
        for segment in self.segments:
            segment.delete()
        for path in self.directory.iterdir():
            path.unlink()
        self.directory.rmdir()
