"""What a restart after kill -9 starts from, written as a partition grows (between rolls).

A partition's producer state is rebuilt from its newest producer snapshot plus a replay of
the batches after it, and its active segment's indexes from the segment itself; Kafka
snapshots producer state only at a roll and at a clean shutdown, so after kill -9 it replays
the whole active segment (up to segment.bytes). Here both also have periodic restart points,
written without fsync (after a power loss the first start of the boot verifies everything
anyway, LogManager.open): a producer snapshot every ``PRODUCER_SNAPSHOT_INTERVAL`` offsets
once the state changed, and the active segment's new index entries every
``INDEX_CHECKPOINT_BYTES`` (Segment.resume walks only what came after them).
"""

from __future__ import annotations

import logging
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
