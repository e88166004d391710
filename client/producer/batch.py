"""One batch of records bound for one partition, and the futures of its records.

Records come one by one (``send()``: a future each; ``produce()``: none, as librdkafka's
produce without a delivery callback) or as rows of Arrow columns (``send_arrow()``: no
future per row; the caller waits on the batches). A future remembers its record's place
in the batch; Arrow rows are only ever appended after a batch's single records, so record
``i``'s offset is still the base offset plus ``i``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from weir.protocol.compression import Compression
from weir.protocol.record_builder import BatchBuilder

from ..types import RecordMetadata, TopicPartition

if TYPE_CHECKING:
    from weir.protocol.record_builder import ArrowColumn


def record_size_bound(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]] | None) -> int:
    """Upper bound of one record's encoded size, to decide whether it still fits a batch."""
    size = 21 + (len(key) if key else 0) + (len(value) if value else 0)
    for name, header_value in headers or ():
        size += 10 + len(name) * 3 + (len(header_value) if header_value else 0)
    return size


class ProducerBatch:
    __slots__ = ("tp", "builder", "futures", "created", "base_sequence", "producer_id",
                 "producer_epoch", "attempts", "retry_at", "closed", "settled", "error", "arrow_rows", "_built")

    def __init__(self, tp: TopicPartition, compression: Compression, created: float,
                 loop: asyncio.AbstractEventLoop, capacity: int = 0) -> None:
        self.tp = tp
        self.builder = BatchBuilder(compression, capacity)  # capacity: its memory doubles up to this
        # (the record's place in the batch, its future, its timestamp) of each record sent with a future
        self.futures: list[tuple[int, asyncio.Future[RecordMetadata], int]] = []
        # Done once every record's future is: flush() waits on these, one per batch, not per record.
        self.settled: asyncio.Future[None] = loop.create_future()
        self.created = created
        self.base_sequence = -1  # fixed on first send; a retry re-sends the same sequence
        self.producer_id = -1
        self.producer_epoch = -1
        self.attempts = 0
        self.retry_at = 0.0  # a retried batch waits retry.backoff.ms
        self.closed = False
        self.error: BaseException | None = None  # why the batch failed, for callers waiting on ``settled``
        self.arrow_rows = 0  # rows appended from Arrow columns, after the single records
        self._built: tuple[tuple[int, int, int, bool], bytearray] | None = None  # (producer fields, encoded)

    @property
    def size(self) -> int:
        return self.builder.size

    @property
    def record_count(self) -> int:
        return self.builder.count

    @property
    def anonymous(self) -> int:
        """Records without a future (Producer.produce): flush() reports their error. Counted from the
        others, so the per-record path writes no counter of its own."""
        return self.builder.count - self.arrow_rows - len(self.futures)

    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   headers: list[tuple[str, bytes | None]] | None, future: asyncio.Future[RecordMetadata] | None,
                   limit: int) -> int:
        """Add one record (``future``: None for none) unless the batch holds some and would pass ``limit``
        bytes with it (``limit`` < 0: no limit); the bytes it took, or -1 when it did not fit."""
        builder = self.builder
        count = builder.count
        if self.arrow_rows:
            return -1
        added = builder.try_append(timestamp, key, value, headers, limit)
        if added >= 0 and future is not None:
            self.futures.append((count, future, timestamp))
        return added

    def append_arrow(self, timestamp: int, keys: ArrowColumn, values: ArrowColumn, length: int, rows: bytes, start: int,
                     limit: int) -> int:
        """Encode ``rows[start:]`` of Arrow key/value columns (see ``BatchBuilder.append_arrow``) until the
        batch reaches ``limit`` bytes; the position in ``rows`` to go on from."""
        end = self.builder.append_arrow(timestamp, keys, values, length, rows, start, limit)
        self.arrow_rows += end - start
        return end

    def encode(self, transactional: bool) -> bytearray:
        """The batch on the wire, for the producer fields it carries now."""
        key = (self.producer_id, self.producer_epoch, self.base_sequence, transactional)
        if self._built is None or self._built[0] != key:
            self._built = (key, self.builder.build(producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                                                   base_sequence=self.base_sequence, transactional=transactional))
        return self._built[1]

    def complete(self, base_offset: int, log_append_time: int) -> None:
        topic, partition = self.tp
        for index, future, timestamp in self.futures:
            if not future.done():
                future.set_result(RecordMetadata(topic, partition, base_offset + index,
                                                 timestamp if log_append_time < 0 else log_append_time))
        if not self.settled.done():
            self.settled.set_result(None)

    def fail(self, error: BaseException) -> None:
        self.error = error
        for _index, future, _timestamp in self.futures:
            if not future.done():
                future.set_exception(error)
                # Marked as seen: a caller that awaits the future still gets the error, but one that
                # dropped it (an aborted transaction's hundreds of sends, whose error the abort or the
                # commit already reported) leaves no "Future exception was never retrieved" on stderr,
                # as a Java send's Future holds its exception silently.
                future.exception()
        if not self.settled.done():
            self.settled.set_result(None)
