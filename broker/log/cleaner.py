"""The log cleaner: compacts partitions whose ``cleanup.policy`` includes ``compact``
(Kafka's ``LogCleaner`` thread and ``LogCleanerManager``).

Every ``log.cleaner.backoff.ms`` without work it looks for the filthiest
partition: the one with the largest share of dirty bytes (written since its
last clean) among its cleanable bytes, if that share passes
``min.cleanable.dirty.ratio``, or any partition whose oldest dirty segment is
older than ``max.compaction.lag.ms``. What is cleanable ends at the first
uncleanable offset: the active segment, the last stable offset (an open
transaction's records are not decided yet) and the first segment younger than
``min.compaction.lag.ms``, rounded down to a segment base.

The pass itself (``compactor.Compactor``) reads, decodes and writes in a child
process (``cleaner_process``: in a thread it stalled the event loop through the
GIL); installing its output (``segment_swap.install``, a few renames, and
opening the new segment) runs in a worker thread, and only swapping the
``Segment`` objects happens on the event loop, under the partition's append lock.
Where each partition's dirty range starts is kept in ``cleaner-offset-checkpoint``
in the data directory, in Kafka's format.

Deviation: Kafka's cleaner never touches the active segment, and its internal
topics roll at offsets.topic.segment.bytes / transaction.state.log.segment.bytes
(100 MiB), so a coordinator loading replays up to that much history per
partition, which is quick in Java. A replay here costs microseconds per record,
so the cleaner also rolls a coordinator topic's active segment once it holds
more bytes than the partition's clean part (and at least
``ACTIVE_ROLL_MIN_BYTES``): the history is compacted as it grows, and a
restart replays a few times the live state, not the history. The topics keep
Kafka's segment.bytes, which still bounds a segment.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from weir.broker.clock import Clock
from weir.broker.config import BrokerConfig
from weir.protocol.errors import KafkaError

from . import cleaner_process, disk, segment_swap
from .compactor import (CleaningAborted, CleaningPlan, CleaningResult, CleaningStats, MAP_ENTRY_BYTES, MAP_LOAD_FACTOR,
                        SegmentFile)
from .open_files import SegmentFiles
from .partition import Partition
from .segment import Segment

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "cleaner-offset-checkpoint"
CHECKPOINT_VERSION = 0


#: The least a coordinator topic's active segment holds before the cleaner rolls it (module docstring).
ACTIVE_ROLL_MIN_BYTES = 256 * 1024


def is_compacted(partition: Partition) -> bool:
    return "compact" in partition.config["cleanup.policy"].split(",")


@dataclass
class LogToClean:
    """A partition's cleanable range, measured (Kafka's ``LogToClean``)."""
    partition: Partition
    first_dirty: int
    first_uncleanable: int  # base of the first segment not to clean
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool  # max.compaction.lag.ms passed

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def cleanable(self) -> bool:
        if self.cleanable_bytes <= 0:
            return False
        return self.needs_compaction_now or self.ratio > self.partition.config["min.cleanable.dirty.ratio"]


class OffsetCheckpoint:
    """``cleaner-offset-checkpoint``: version, count, then ``topic partition offset`` lines."""

    def __init__(self, path: Path):
        self.path = path
        self.offsets: dict[tuple[str, int], int] = {}

    def load(self) -> None:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return
        if not lines or lines[0].strip() != str(CHECKPOINT_VERSION):
            log.warning("ignoring %s: unknown version", self.path)
            return
        for line in lines[2:]:
            topic, index, offset = line.rsplit(" ", 2)
            self.offsets[(topic, int(index))] = int(offset)

    def write(self) -> None:
        body = "".join(f"{topic} {index} {offset}\n" for (topic, index), offset in sorted(self.offsets.items()))
        disk.replace_durably(self.path, f"{CHECKPOINT_VERSION}\n{len(self.offsets)}\n{body}".encode(),
                             sync_directory=False)


class LogCleaner:
    def __init__(self, data_dir: Path, config: BrokerConfig, clock: Clock,
                 partitions: Callable[[], Iterable[Partition]],
                 runner: cleaner_process.PassRunner = cleaner_process.in_child_process):
        """``partitions``: a callable giving every partition of the broker now; ``runner``: where
        a pass runs (``cleaner_process``)."""
        self.config = config
        self.runner = runner
        self.clock = clock
        self.partitions = partitions
        self.checkpoint = OffsetCheckpoint(Path(data_dir) / CHECKPOINT_FILE)
        self.checkpoint.load()
        self._stopped = False
        # the pass in flight: its partition, the event that aborts it, its worker-thread future
        self._current: tuple[Partition, threading.Event, asyncio.Future[CleaningResult]] | None = None
        self.last_stats: tuple[CleaningStats, float] | None = None

    # ------------------------------------------------------------------ choosing

    def log_to_clean(self, partition: Partition, now_ms: int) -> LogToClean:
        segments = partition.segments
        first_dirty = self.checkpoint.offsets.get((partition.topic, partition.index), partition.log_start_offset)
        if not partition.log_start_offset <= first_dirty <= partition.log_end_offset:
            first_dirty = partition.log_start_offset  # truncated or deleted under us: clean it all
        sealed_dirty = [s for s in segments[:-1] if s.next_offset > first_dirty]
        uncleanable = min(partition.last_stable_offset, partition.active.base_offset)
        min_lag = partition.config["min.compaction.lag.ms"]
        if min_lag > 0:
            young = next((s.base_offset for s in sealed_dirty if s.max_timestamp > now_ms - min_lag), None)
            if young is not None:
                uncleanable = min(uncleanable, young)
        uncleanable = max(first_dirty, uncleanable)
        first_uncleanable = next((s.base_offset for s in segments if s.next_offset > uncleanable),
                                 partition.active.base_offset)
        first_uncleanable = min(first_uncleanable, partition.active.base_offset)
        clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
        cleanable_bytes = sum(s.size for s in segments
                              if s.base_offset < first_uncleanable and s.next_offset > first_dirty)
        max_lag = partition.config["max.compaction.lag.ms"]
        first_times = [s.time_index.keys[0] for s in sealed_dirty if len(s.time_index) and s.time_index.keys[0] > 0]
        needs_now = bool(first_times) and min(first_times) < now_ms - max_lag
        return LogToClean(partition, first_dirty, first_uncleanable, clean_bytes, cleanable_bytes, needs_now)

    def filthiest(self, now_ms: int) -> LogToClean | None:
        candidates = [self.log_to_clean(p, now_ms) for p in self.partitions() if is_compacted(p)]
        candidates = [c for c in candidates if c.cleanable]
        return max(candidates, key=lambda c: c.ratio, default=None)

    async def roll_coordinator_segments(self) -> int:
        """Roll each coordinator topic's active segment that outgrew the clean part (see the
        module docstring); how many were rolled."""
        from .manager import INTERNAL_TOPICS  # the manager imports this module
        rolled = 0
        now_ms = self.clock.now_ms()
        for partition in list(self.partitions()):
            if partition.topic not in INTERNAL_TOPICS or not is_compacted(partition):
                continue
            active = partition.active
            if active.size < max(ACTIVE_ROLL_MIN_BYTES, self.log_to_clean(partition, now_ms).clean_bytes):
                continue
            async with partition._append_lock:
                if partition.active is not active:
                    continue
                try:
                    partition.roll()
                except KafkaError:
                    continue  # a failed write, logged by the disk layer; tried again next round
                rolled += 1
        return rolled

    # ------------------------------------------------------------------ cleaning

    async def run(self) -> None:
        """The background loop (``log.cleaner.enable``)."""
        backoff = self.config["log.cleaner.backoff.ms"] / 1000
        while not self._stopped:
            try:
                cleaned = await self.clean_filthiest()
            except asyncio.CancelledError:
                raise
            except OSError as exc:  # the disk's state, logged once by the disk layer
                disk.failed(self.checkpoint.path, exc, "log cleaner pass")
                cleaned = False
            except KafkaError:  # a failed write, logged once by the disk layer
                cleaned = False
            except Exception:
                log.exception("log cleaner pass failed; retrying after the backoff")
                cleaned = False
            if not cleaned:
                await self.clock.sleep(backoff)

    async def clean_filthiest(self) -> bool:
        await self.roll_coordinator_segments()
        target = self.filthiest(self.clock.now_ms())
        if target is None:
            return False
        await self.clean(target)
        return True

    async def clean(self, target: LogToClean) -> CleaningResult | None:
        partition = target.partition
        segments = self._segments_to_clean(target)
        if not segments:
            return None
        started = time.perf_counter()
        abort = threading.Event()
        partition.being_cleaned = True
        plan = self._plan(target, segments)  # pins them: the open-file LRU must not close them meanwhile
        try:
            running = asyncio.get_running_loop().run_in_executor(None, self.runner, plan, abort)
            self._current = (partition, abort, running)
            try:
                result = await running
            except CleaningAborted:
                return None
            finally:
                self._current = None
            if abort.is_set():  # the broker is stopping or the topic going: drop the pass's output
                for group in result.groups:
                    segment_swap.discard_cleaned(partition.directory, group.base_offset)
                return None
            installed = await self._install(partition, result, {s.base_offset: s for s in segments})
        finally:
            for segment in segments:
                segment.unpin()
            partition.being_cleaned = False
        if installed:
            self.checkpoint.offsets[(partition.topic, partition.index)] = result.end_offset
            await asyncio.get_running_loop().run_in_executor(None, self.checkpoint.write)
        elapsed = time.perf_counter() - started
        stats = result.stats
        self.last_stats = (stats, elapsed)
        log.info("%s-%d: cleaned [%d, %d): %.1f MB read, %.1f MB written, %d of %d records kept, "
                 "%d group(s) in %.2f s (%.1f MB/s)", partition.topic, partition.index, target.first_dirty,
                 result.end_offset, stats.bytes_read / 1e6, stats.bytes_written / 1e6, stats.records_written,
                 stats.records_read, len(result.groups), elapsed, stats.bytes_read / 1e6 / max(elapsed, 1e-9))
        return result

    @staticmethod
    def _segments_to_clean(target: LogToClean) -> list[Segment]:
        return [s for s in target.partition.segments[:-1] if s.base_offset < target.first_uncleanable]

    def _plan(self, target: LogToClean, segments: list[Segment] | None = None) -> CleaningPlan:
        """What the pass needs, with each segment pinned open (the caller unpins them)."""
        partition = target.partition
        if segments is None:
            segments = self._segments_to_clean(target)
        config = partition.config
        capacity = int(self.config["log.cleaner.dedupe.buffer.size"] // MAP_ENTRY_BYTES * MAP_LOAD_FACTOR)
        files = [SegmentFile(s.base_offset, s.size, s.next_offset, s.pin()) for s in segments]
        return CleaningPlan(
            directory=partition.directory, segments=files, first_dirty=target.first_dirty,
            first_uncleanable=target.first_uncleanable,
            aborted=[entry for s in segments for entry in s.txn_index.entries],
            producer_epochs={pid: entry.epoch for pid, entry in partition.producers.producers.items()},
            now_ms=self.clock.now_ms(), delete_retention_ms=config["delete.retention.ms"],
            segment_bytes=config["segment.bytes"], index_interval_bytes=config["index.interval.bytes"],
            map_capacity=max(capacity, 1))

    async def _install(self, partition: Partition, result: CleaningResult, by_base: dict[int, Segment]) -> bool:
        """Swap each cleaned group in, under the append lock. The renames, fsyncs and the
        opening of the new segment run in a worker thread (fetches meanwhile read the old
        segments, whose files stay readable); the loop only swaps the Segment objects.
        A group whose segments changed meanwhile (the topic went) is discarded."""
        loop = asyncio.get_running_loop()
        installed = True
        async with partition._append_lock:
            for group in result.groups:
                replaced = [by_base[base] for base in group.replaced]
                if not _still_there(partition, replaced):
                    segment_swap.discard_cleaned(partition.directory, group.base_offset)
                    installed = False
                    continue
                cleaned = await loop.run_in_executor(None, _install_files, partition, group.base_offset, replaced)
                cleaned.move_to(partition.files)
                partition.replace_segments(replaced, cleaned)
                for old in replaced:
                    old.retire()
        return installed

    async def stop(self) -> None:
        """Abort a pass in flight (its ``.cleaned`` files are removed) and wait for its thread."""
        self._stopped = True
        await self._abort_pass(None)

    async def forget(self, partition: Partition) -> None:
        """The partition is going (DeleteTopics): abort a pass on it, drop its checkpoint."""
        await self._abort_pass(partition)
        if self.checkpoint.offsets.pop((partition.topic, partition.index), None) is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.checkpoint.write)
            except KafkaError:
                # A full disk must not stop a deletion. The stale entry is rewritten with the next
                # pass's checkpoint; meanwhile it could only delay cleaning a topic re-created so.
                pass

    async def _abort_pass(self, partition: Partition | None) -> None:
        if self._current is None or partition not in (None, self._current[0]):
            return
        _partition, abort, running = self._current
        abort.set()
        try:
            await running
        except (CleaningAborted, Exception):
            pass


def _install_files(partition: Partition, base_offset: int, replaced: list[Segment]) -> Segment:
    """In a worker thread: the cleaned segment opens with a file budget of its own, since the broker's
    (partition.files) belongs to the event loop; the caller moves it there."""
    segment_swap.install(partition.directory, base_offset, replaced)
    cleaned = Segment(partition.directory, base_offset, partition.config["index.interval.bytes"], SegmentFiles(1))
    cleaned.load()
    cleaned.txn_index.load()
    return cleaned


def _still_there(partition: Partition, segments: list[Segment]) -> bool:
    try:
        first = partition.segments.index(segments[0])
    except ValueError:
        return False
    return partition.segments[first:first + len(segments)] == segments
