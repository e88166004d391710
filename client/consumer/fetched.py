"""Turning a Fetch answer for one partition into the records a consumer may see.

This is the client's half of read_committed (the broker never filters): the
answer lists the aborted transactions overlapping the returned batches, and
the consumer drops the batches of a producer from the first offset of its
aborted transaction until that transaction's ABORT marker, as Kafka's
``CompletedFetch`` does. Control batches (markers) are never shown; every
batch, shown or not, moves the position past itself.
"""

from __future__ import annotations

import heapq

from protocol import records as rec

from ..types import ConsumerRecord

_LOG_APPEND_TIME = 1


def visible_records(topic: str, partition: int, data, position: int, aborted, read_committed: bool,
                    ) -> tuple[list[ConsumerRecord], int]:
    """Records at or after ``position`` in ``data`` (whole batches; a cut-off last one is ignored),
    and the position after the last whole batch."""
    out: list[ConsumerRecord] = []
    pending = [(a.first_offset, a.producer_id) for a in aborted or ()] if read_committed else []
    heapq.heapify(pending)
    aborting: set[int] = set()
    next_position = position
    for offset, header in rec.iter_headers(data):
        if header.last_offset < position:
            continue
        next_position = header.last_offset + 1
        while pending and pending[0][0] <= header.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        if header.is_control:
            if header.producer_id in aborting and _is_abort_marker(data, offset):
                aborting.discard(header.producer_id)
            continue
        if read_committed and header.is_transactional and header.producer_id in aborting:
            continue
        _header, records = rec.decode_batch(data, offset)
        timestamp_type = _LOG_APPEND_TIME if header.attributes & rec.TIMESTAMP_TYPE_FLAG else 0
        for record in records:
            if record.offset < position:
                continue
            timestamp = header.max_timestamp if timestamp_type == _LOG_APPEND_TIME else record.timestamp
            out.append(ConsumerRecord(topic, partition, record.offset, timestamp, timestamp_type,
                                      record.key, record.value, record.headers,
                                      header.partition_leader_epoch))
    return out, next_position


def _is_abort_marker(data, offset: int) -> bool:
    _header, records = rec.decode_batch(data, offset)
    kind, _coordinator_epoch = rec.decode_control_record(records[0])
    return kind == rec.CONTROL_ABORT
