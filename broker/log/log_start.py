"""What moves a partition's log start offset: retention and DeleteRecords.

Both decide here how far the start moves; ``Partition.drop_oldest_segments``
owns the segment list and makes the change.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from weir.protocol.errors import Errors, KafkaError

from . import disk

if TYPE_CHECKING:
    from .partition import Partition

log = logging.getLogger(__name__)

LOG_START_OFFSET_FILE = "log-start-offset"  # set by DeleteRecords; Kafka's log-start-offset-checkpoint


def apply_retention(partition: Partition, now_ms: int) -> int:
    """Delete whole sealed segments past retention.ms / retention.bytes; count deleted."""
    config = partition.config
    if "delete" not in config["cleanup.policy"].split(",") or partition.being_cleaned:
        return 0  # compact-only: the cleaner compacts it; being cleaned: retention runs next time
    retention_ms, retention_bytes = config["retention.ms"], config["retention.bytes"]
    size = partition.size_bytes
    doomed = 0
    for oldest in partition.segments[:-1]:
        too_old = retention_ms >= 0 and 0 <= oldest.max_timestamp < now_ms - retention_ms
        too_big = retention_bytes >= 0 and size - oldest.size >= retention_bytes
        if not (too_old or too_big):
            break
        size -= oldest.size
        doomed += 1
    if doomed:
        partition.drop_oldest_segments(doomed)
        log.info("%s-%d: retention deleted %d segment(s); log start offset now %d",
                 partition.topic, partition.index, doomed, partition.log_start_offset)
    return doomed


def delete_records_before(partition: Partition, offset: int) -> int:
    """Advance the log start offset to ``offset`` (DeleteRecords); the new low watermark.

    As Kafka's ``maybeIncrementLogStartOffset``: above the high watermark is
    OFFSET_OUT_OF_RANGE, a lower offset than the current start changes
    nothing. The new start is persisted (Kafka's log-start-offset-checkpoint,
    one file per partition here) before the answer, and whole segments below
    it are deleted at once (Kafka leaves that to its retention thread). Producer
    state is kept: a restart gets it back from the snapshot written at each roll.
    """
    high_watermark = partition.high_watermark
    if offset > high_watermark:
        raise KafkaError(Errors.OFFSET_OUT_OF_RANGE,
                         f"Cannot increment the log start offset to {offset} of partition {partition.topic}-"
                         f"{partition.index} since it is larger than the high watermark {high_watermark}")
    if offset > partition.log_start_offset:
        disk.replace_durably(partition.directory / LOG_START_OFFSET_FILE, f"{offset}\n".encode(),
                             sync_directory=False)
        partition.log_start_offset = offset
        segments = partition.segments
        below = sum(1 for following in segments[1:] if following.base_offset <= offset)
        partition.drop_oldest_segments(below)
    return partition.log_start_offset


def load(partition: Partition) -> None:
    """At open: the start DeleteRecords persisted, if it is past the first segment's base."""
    path = partition.directory / LOG_START_OFFSET_FILE
    if path.exists():
        stored = int(path.read_text().strip())
        partition.log_start_offset = min(max(partition.log_start_offset, stored), partition.log_end_offset)
