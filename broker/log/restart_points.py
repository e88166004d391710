"""What a restart after kill -9 starts from, written as a partition grows (between rolls).

A partition's producer state is rebuilt from its newest producer snapshot plus a replay of
the batches after it, and its active segment's indexes from the segment itself; Kafka
snapshots producer state only at a roll and at a clean shutdown, so after kill -9 it replays
the whole active segment (up to segment.bytes). Here both also have periodic restart points,
written without fsync (after a power loss the first start of the boot verifies everything
anyway, LogManager.open): a producer snapshot every ``PRODUCER_SNAPSHOT_INTERVAL`` offsets and
``PRODUCER_SNAPSHOT_BATCHES`` producer batches once the state changed, and the active segment's
new index entries every ``INDEX_CHECKPOINT_BYTES`` and ``INDEX_CHECKPOINT_ENTRIES`` entries
(Segment.resume walks only what came after them). Both are taken
on the event loop and written by one worker thread in the order taken (restart_writer.py): the
loop no longer opens, writes and closes files for them. A roll and a clean close settle what is
queued for the partition before writing its files themselves; a deletion discards it.

It also keeps which boot last verified the data directory (``BOOT_ID_FILE``): a start in the
same boot trusts the page cache and checks no CRC (``LogManager.open``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from weir.protocol.errors import KafkaError

from . import disk, txn_index
from .restart_writer import WRITER

if TYPE_CHECKING:
    from .index import IndexWrite
    from .partition import Partition
    from .segment import Segment

log = logging.getLogger(__name__)

# At least this many offsets between two producer snapshots, and 16 per producer (each costs), and
# this many producer batches: the next start replays the batches after the snapshot, so large batches
# need one less often by offsets (1 MB of 1 KiB records every 2 batches was a thread job per 2 MB).
PRODUCER_SNAPSHOT_INTERVAL = 2048
PRODUCER_SNAPSHOT_BATCHES = 32
# The active segment's new index entries are appended to its index files (without fsync) each time
# it grew this much (a coordinator topic's active segment stays near a MiB) and gained this many
# offset-index entries, and at a clean close. A restart walks the batches after the last entry
# written, one header each: small batches reach the entries long before the bytes, while ~1 MB
# batches (librdkafka's default) would queue a checkpoint with every batch on the bytes alone
# (~1,000 thread jobs per GB, each waking the thread and trading the GIL with the loop: issue 33).
INDEX_CHECKPOINT_BYTES = 256 * 1024
INDEX_CHECKPOINT_ENTRIES = 32
# A clean close checkpoints them only past this many unindexed bytes: the next start walks a smaller
# tail's headers in well under a millisecond, while the checkpoint, creating two files for a segment
# that has none yet, cost 4-6 ms on a loaded VM (thousands of partitions: seconds of shutdown).
CLOSE_INDEX_CHECKPOINT_BYTES = 64 * 1024


def snapshot_producers_if_due(partition: Partition) -> None:
    """The periodic producer snapshot, without fsync, written by the restart-point thread. The
    aborts it no longer replays must be on the disk first, as at a roll: the .txnindex (and its
    name) before the snapshot covering it, in that thread too. What it writes is taken here."""
    producers = partition.producers
    interval = max(PRODUCER_SNAPSHOT_INTERVAL, 16 * len(producers.producers))
    if partition.log_end_offset - max(producers.snapshot_offset, 0) < interval or not producers.unsnapshotted \
            or producers.batches_since_snapshot < PRODUCER_SNAPSHOT_BATCHES:
        return
    txn_indexes = [segment.txn_index for segment in partition.segments if segment.txn_index.unsynced]
    try:
        aborts = [taken for index in txn_indexes if (taken := index.take_unsynced()) is not None]
    except KafkaError as exc:  # a .txnindex rewrite failed: logged by the disk layer; no snapshot yet
        for index in txn_indexes:
            index.sync_failed()
        log.debug("%s-%d: periodic producer snapshot not written: %s", partition.topic, partition.index,
                  exc.message)
        return
    directory = partition.directory if partition.directory_unsynced else None
    partition.directory_unsynced = False
    offset = partition.log_end_offset
    snapshot_path, data = producers.snapshot_path(offset), producers.encode_snapshot()
    producers.snapshot_taken(offset)

    def write() -> None:
        for abort_path in aborts:
            txn_index.fsync_file(abort_path)
        if directory is not None:
            disk.fsync_directory(directory)
        disk.replace_file(snapshot_path, data)
        producers.remove_old_snapshots()

    def failed(exc: KafkaError) -> None:  # logged by the disk layer; the next start replays more
        producers.unsnapshotted = True
        for index in txn_indexes:
            index.sync_failed()
        if directory is not None:
            partition.directory_unsynced = True
        log.debug("%s-%d: periodic producer snapshot at %d not written: %s", partition.topic, partition.index,
                  offset, exc.message)

    WRITER.submit(partition, write, failed)


def checkpoint_indexes(partition: Partition, segment: Segment) -> None:
    """The active segment's new index entries, taken here, appended to its files by the
    restart-point thread (a failure makes the next checkpoint rewrite them whole)."""
    taken = segment.take_index_checkpoint()
    if taken:
        WRITER.submit(partition, lambda: _write_all(taken), segment.index_checkpoint_failed)


def _write_all(taken: list[IndexWrite]) -> None:
    for write in taken:
        write.write()


def settle(partition: Partition) -> None:
    """Before a roll or a close writes the partition's restart-point files itself."""
    WRITER.settle(partition)


def discard(partition: Partition) -> None:
    """Before the partition's files are deleted: its queued restart points are never written."""
    WRITER.discard(partition)


def save_at_close(partition: Partition, sync: bool) -> tuple[int, bytes] | None:
    """A clean close's restart points (``Partition.close``): the aborts on disk, the producer state
    (a snapshot file with ``sync``, else returned for the shutdown's producer_checkpoint), and the
    active segment's new index entries when there are many. Raises KafkaError (disk layer)."""
    settle(partition)
    saved = None
    if any(segment.txn_index.unsynced for segment in partition.segments):
        # the aborts on disk before the snapshot that stops their replay at the next start
        for segment in partition.segments:
            segment.txn_index.flush()
        if not sync and partition.directory_unsynced:  # a new .txnindex's name, too
            disk.fsync_directory(partition.directory)
            partition.directory_unsynced = False
    if sync:
        partition.flush()
    # Only for a producer state changed since its newest snapshot (or its load): most partitions
    # of a large broker are unchanged.
    producers = partition.producers
    if producers.unsnapshotted and producers.snapshot_offset != partition.log_end_offset:
        if sync:
            producers.write_snapshot(partition.log_end_offset)
        else:
            saved = (partition.log_end_offset, producers.encode_snapshot())
            producers.snapshot_taken(partition.log_end_offset)
    if partition.observer is not None:
        partition.observer.closing()
    active = partition.active
    if active.size - active.checkpointed_size >= CLOSE_INDEX_CHECKPOINT_BYTES:
        active.write_index_checkpoint()
    return saved


# Recovery after a crash checks the CRC of every batch of each active segment (up to
# segment.bytes, 1 GiB by default), as Kafka recovers from its recovery point: a power loss can
# leave anything in what was not fsynced. A process killed without a reboot cannot: the page
# cache holds every byte it wrote, and only its last write can be torn short, which the batch
# lengths show. So the data directory records the boot (Linux's boot_id) once a start has
# verified everything; a start in the same boot checks lengths and offsets only.
BOOT_ID_FILE = "recovery-boot-id"
# Test hook: the power-cut tests "reboot" by changing the file WEIR_BOOT_ID_FILE names.
_BOOT_ID_PATH = os.environ.get("WEIR_BOOT_ID_FILE") or "/proc/sys/kernel/random/boot_id"


def _read_text(path: str | Path) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def boot_id() -> str | None:
    return _read_text(_BOOT_ID_PATH)


def verified_in_boot(data_dir: Path, boot: str | None) -> bool:
    """A start in this boot verified the data directory already: the page cache can be trusted."""
    return boot is not None and _read_text(data_dir / BOOT_ID_FILE) == boot


def record_verified_boot(data_dir: Path, boot: str | None) -> None:
    if boot is None:
        return
    try:
        disk.replace_file(data_dir / BOOT_ID_FILE, boot.encode())
    except KafkaError:
        pass  # the next start verifies every CRC again
