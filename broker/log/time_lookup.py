"""Finding records by time in a partition: ListOffsets by timestamp and by max timestamp (-3).

Read-only queries over a partition's segments, their time indexes and, for the
answer's exact record, the one batch that holds it (decoded, decompressed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from weir.protocol import records as rec

if TYPE_CHECKING:
    from .partition import Partition


def offset_for_timestamp(partition: Partition, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after ``timestamp`` and at or after the
    log start offset: records DeleteRecords removed may still sit in the first segment."""
    start = partition.log_start_offset
    for segment in partition.segments:
        if segment.max_timestamp < timestamp:
            continue
        header = segment.first_batch_at_or_after_time(timestamp)
        found = segment.position_of(header.base_offset) if header is not None else None
        if found is None:
            continue
        position, _ = found
        for batch in segment.scan(position):
            header = batch.header
            if header.max_timestamp < timestamp or header.last_offset < start:
                continue
            if header.is_control:
                return header.base_offset, header.max_timestamp
            _, records = rec.decode_batch(segment.read(batch.position, header.size))
            for record in records:
                if record.timestamp >= timestamp and record.offset >= start:
                    return record.offset, record.timestamp
    return None


def max_timestamp_offset(partition: Partition) -> tuple[int, int] | None:
    """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3).

    As Kafka since KAFKA-16310: of the batches sharing the largest timestamp the
    earliest wins (the first segment holding it, then its first batch, found from the
    time index), and in that batch the earliest record carrying the timestamp.
    """
    segment = max(partition.segments, key=lambda s: s.max_timestamp)  # max() keeps the first of equals
    header = segment.first_batch_at_or_after_time(segment.max_timestamp)
    if header is None:
        return None
    if header.attributes & rec.TIMESTAMP_TYPE_FLAG:
        return header.base_offset, header.max_timestamp  # LogAppendTime: every record has the batch's
    found = segment.position_of(header.base_offset)
    if found is None:
        return None
    position, _ = found
    _, records = rec.decode_batch(segment.read(position, header.size))
    # the first record with the batch's largest timestamp, read from the records themselves: the
    # stored header's max timestamp is the producer's, where Kafka recomputes it on append
    winner = max(records, key=lambda record: record.timestamp)
    return winner.offset, winner.timestamp
