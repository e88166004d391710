"""What a restart after kill -9 starts from, written as a partition grows (between rolls).

A partition's producer state is rebuilt from its newest producer snapshot plus a replay of
the batches after it, and its active segment's indexes from the segment itself; Kafka
snapshots producer state only at a roll and at a clean shutdown, so after kill -9 it replays
the whole active segment (up to segment.bytes). Here both also have periodic restart points,
written without fsync (after a power loss the first start of the boot verifies everything
anyway, LogManager.open): a producer snapshot every ``PRODUCER_SNAPSHOT_INTERVAL`` offsets
once the state changed, and the active segment's new index entries every
``INDEX_CHECKPOINT_BYTES`` (Segment.resume walks only what came after them).

It also keeps which boot last verified the data directory (``BOOT_ID_FILE``): a start in the
same boot trusts the page cache and checks no CRC (``LogManager.open``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from weir.protocol.errors import KafkaError

from . import disk

if TYPE_CHECKING:
    from .partition import Partition
    from .segment import Segment

log = logging.getLogger(__name__)

# At least this many offsets between two producer snapshots, and 16 per producer (each costs).
PRODUCER_SNAPSHOT_INTERVAL = 2048
# The active segment's new index entries are appended to its index files (without fsync) each time
# it grew this much (a coordinator topic's active segment stays near a MiB), and at a clean close.
INDEX_CHECKPOINT_BYTES = 256 * 1024
# A clean close checkpoints them only past this many unindexed bytes: the next start walks a smaller
# tail's headers in well under a millisecond, while the checkpoint, creating two files for a segment
# that has none yet, cost 4-6 ms on a loaded VM (thousands of partitions: seconds of shutdown).
CLOSE_INDEX_CHECKPOINT_BYTES = 64 * 1024


def snapshot_producers_if_due(partition: Partition) -> None:
    """The periodic producer snapshot, without fsync. The aborts it no longer replays must be on
    the disk first, as at a roll: the .txnindex (and its name) before the snapshot covering it."""
    producers = partition.producers
    interval = max(PRODUCER_SNAPSHOT_INTERVAL, 16 * len(producers.producers))
    if partition.log_end_offset - max(producers.snapshot_offset, 0) < interval or not producers.unsnapshotted:
        return
    try:
        for segment in partition.segments:
            segment.txn_index.flush()
        if partition.directory_unsynced:
            disk.fsync_directory(partition.directory)
            partition.directory_unsynced = False
        producers.write_snapshot(partition.log_end_offset, durable=False)
    except KafkaError as exc:  # logged by the disk layer; the next start replays more
        log.debug("%s-%d: periodic producer snapshot not written: %s", partition.topic, partition.index,
                  exc.message)


def checkpoint_indexes(partition: Partition, segment: Segment) -> None:
    try:
        segment.write_index_checkpoint()
    except KafkaError as exc:  # logged by the disk layer; the next start walks more
        segment.checkpointed_size = segment.size
        log.debug("%s-%d: index checkpoint not written: %s", partition.topic, partition.index, exc.message)


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
