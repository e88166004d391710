"""Rebuilding a partition's producer state when it opens: the newest snapshot, then a replay
of the batches after it through the same updates live appends make (Kafka's
``ProducerStateManager`` reload). Batches are read a chunk at a time and markers
in place; recovery has checked their CRCs by then.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from weir.protocol import records as rec

from . import partition_txns

if TYPE_CHECKING:
    from .partition import Partition
    from .segment import Segment

log = logging.getLogger(__name__)


def rebuild(partition: Partition, saved: tuple[int, bytes] | None = None) -> None:
    """``saved``: the partition's (offset, snapshot bytes) from the shutdown's producer_checkpoint,
    taken when newer than its newest snapshot file and not past its log end."""
    producers = partition.producers
    start = producers.load_snapshot(partition.log_end_offset)
    if saved is not None and start < saved[0] <= partition.log_end_offset \
            and producers.load_encoded(saved[1], saved[0]):
        start = saved[0]
    replay_from = max(start, partition.log_start_offset)
    for segment in partition.segments:
        segment.txn_index.truncate_from(replay_from)  # aborts past the snapshot are replayed
    replayed = 0
    for segment in partition.segments_from(replay_from):
        for _position, header, batch in segment.batches(_scan_start(segment, replay_from)):
            if header.last_offset < replay_from or header.producer_id < 0:
                continue
            if header.is_control:
                if not header.records_count:
                    continue  # a marker the cleaner emptied: its transaction is gone from the log
                kind, coordinator_epoch = rec.read_control_batch(batch)
                partition_txns.complete(partition, segment, header, coordinator_epoch, kind == rec.CONTROL_COMMIT)
            else:
                producers.record_batch(header, header.base_offset)
            replayed += 1
    if replayed:
        log.info("%s-%d: producer state rebuilt from snapshot at %d plus %d batches",
                 partition.topic, partition.index, start, replayed)


def _scan_start(segment: Segment, offset: int) -> int:
    if offset <= segment.base_offset:
        return 0
    return segment.offset_index.floor(offset) or 0
