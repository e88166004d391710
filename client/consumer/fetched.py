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
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from weir.protocol import records as rec
from weir.protocol.compression import decompress
from weir.protocol.primitives import DecodeError, ReadBuffer
from weir.protocol.record_decode import decode_into

from ..types import ConsumerRecord, TopicPartition

if TYPE_CHECKING:
    from weir.protocol.record_arrow import Columns

_LOG_APPEND_TIME = 1


def next_fetch_position(data: ReadBuffer, position: int) -> int:
    """The position after the last whole batch of ``data`` that ends at or after ``position``
    (batch headers only: no record is decoded)."""
    next_position = position
    for _offset, header in rec.iter_headers(data):
        last = header.last_offset
        if last >= position:
            next_position = last + 1
    return next_position


class CompletedFetch:
    """One partition's answer to a Fetch, decoded on first use (as the Java client's
    ``CompletedFetch``), so decoding one answer overlaps the broker serving the next. It is handed
    out as record objects (``take``) or as Arrow columns (``take_arrow``), or both in turn."""

    __slots__ = ("tp", "data", "fetched_from", "end", "aborted", "read_committed", "size", "_records", "_taken",
                 "_walked")

    def __init__(self, tp: TopicPartition, data: ReadBuffer, fetched_from: int, end: int, aborted: list[Any] | None,
                 read_committed: bool) -> None:
        self.tp = tp
        self.data: ReadBuffer | None = data
        self.fetched_from = fetched_from  # where what is not yet handed out begins
        self.end = end  # the fetch position after this answer
        self.aborted = aborted
        self.read_committed = read_committed
        self.size = len(data)
        self._records: list[ConsumerRecord] | None = None
        self._taken = 0
        self._walked = False  # take_arrow handed out every record of the answer

    @property
    def position(self) -> int:
        """Offset of the next record this answer hands out (its end once all are out)."""
        if self._walked:
            return self.end
        if self._records is None:
            return self.fetched_from
        if self._taken < len(self._records):
            return self._records[self._taken].offset
        return self.end

    @property
    def exhausted(self) -> bool:
        return self._walked or (self._records is not None and self._taken >= len(self._records))

    def take(self, count: int) -> list[ConsumerRecord]:
        """Up to ``count`` more records, decoding the answer on the first call."""
        if self._records is None:
            assert self.data is not None  # dropped only once decoded
            self._records, _end = visible_records(self.tp.topic, self.tp.partition, self.data, self.fetched_from,
                                                  self.aborted, self.read_committed)
            self.data = None  # the records hold what they need
        start = self._taken
        if start == 0 and count >= len(self._records):
            self._taken = len(self._records)
            return self._records
        self._taken = min(start + count, len(self._records))
        return self._records[start:self._taken]

    def take_arrow(self, columns: Columns, limit: int) -> None:
        """Append more records to ``columns``, until it holds ``limit`` rows (walked from the bytes in C,
        no object per record)."""
        if self._records is not None:  # decoded already by take(): the rest of those, as columns
            columns.add_rows([(r.key, r.value, r.offset, r.timestamp, r.timestamp_type, r.headers)
                              for r in self.take(limit - columns.rows)])
            return
        assert self.data is not None
        position = self.fetched_from
        if not columns.rows:
            columns.reserve(len(self.data))  # uncompressed, the values take less than the answer
        for offset, header in visible_batches(self.data, position, self.aborted, self.read_committed):
            if columns.rows >= limit:
                self.fetched_from = position
                return
            timestamp_type = _LOG_APPEND_TIME if header.attributes & rec.TIMESTAMP_TYPE_FLAG else 0
            log_append_time = header.max_timestamp if timestamp_type == _LOG_APPEND_TIME else None
            after = columns.add(batch_body(self.data, offset, header), header.records_count, header.base_offset,
                                header.base_timestamp, log_append_time, timestamp_type, position, limit)
            position = max(position, after)
            if columns.rows >= limit and after <= header.last_offset:  # stopped inside this batch
                self.fetched_from = position
                return
        self._walked, self.data = True, None


def visible_batches(data: ReadBuffer, position: int, aborted: list[Any] | None, read_committed: bool,
                    ) -> Iterator[tuple[int, rec.BatchHeader]]:
    """(offset in ``data``, header) of each whole batch holding records a consumer at ``position`` may
    see: control batches and, read_committed, the batches of aborted transactions are left out."""
    pending = [(a.first_offset, a.producer_id) for a in aborted or ()] if read_committed else []
    heapq.heapify(pending)
    aborting: set[int] = set()
    for offset, header in rec.iter_headers(data):
        if header.last_offset < position:
            continue
        while pending and pending[0][0] <= header.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        if header.is_control:
            if header.producer_id in aborting and _is_abort_marker(data, offset):
                aborting.discard(header.producer_id)
            continue
        if read_committed and header.is_transactional and header.producer_id in aborting:
            continue
        yield offset, header


def visible_records(topic: str, partition: int, data: ReadBuffer, position: int, aborted: list[Any] | None,
                    read_committed: bool,
                    ) -> tuple[list[ConsumerRecord], int]:
    """Records at or after ``position`` in ``data`` (whole batches; a cut-off last one is ignored),
    and the position after the last whole batch."""
    out: list[ConsumerRecord] = []
    for offset, header in visible_batches(data, position, aborted, read_committed):
        timestamp_type = _LOG_APPEND_TIME if header.attributes & rec.TIMESTAMP_TYPE_FLAG else 0
        log_append_time = header.max_timestamp if timestamp_type == _LOG_APPEND_TIME else None
        decode_into(out, ConsumerRecord, batch_body(data, offset, header), header.records_count, header.base_offset,
                    header.base_timestamp, log_append_time, position, topic, partition, timestamp_type,
                    header.partition_leader_epoch)
    return out, next_fetch_position(data, position)


def batch_body(data: ReadBuffer, offset: int, header: rec.BatchHeader) -> ReadBuffer:
    """The records of the batch at ``offset``, CRC checked (as the Java consumer's check.crcs does by
    default) and decompressed."""
    if header.magic != rec.MAGIC:
        raise DecodeError(f"unsupported magic {header.magic}")
    end = offset + header.size
    if end > len(data):
        raise DecodeError("truncated batch")
    if not rec.crc_ok(data, offset, header):
        raise DecodeError("batch CRC mismatch")
    body = memoryview(data)[offset + rec.HEADER_SIZE:end]
    return decompress(header.compression, body) if header.compression else body


def _is_abort_marker(data: ReadBuffer, offset: int) -> bool:
    _header, records = rec.decode_batch(data, offset)
    kind, _coordinator_epoch = rec.decode_control_record(records[0])
    return kind == rec.CONTROL_ABORT
