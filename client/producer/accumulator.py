"""Per-partition queues of batches that ``send()`` fills and the sender drains.

A batch is ready when it is full, has waited ``linger_ms``, or a flush is
under way. Bytes held are bounded by ``buffer_memory``: ``send()`` waits for
the sender to free room, as the Java client's ``buffer.memory`` does.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from weir.protocol.compression import Compression

from ..types import RecordMetadata, TopicPartition
from .batch import ProducerBatch

if TYPE_CHECKING:
    from weir.protocol.record_builder import ArrowColumn


class _PartitionQueue(deque[ProducerBatch]):
    """One partition's batches, oldest first; knows its partition."""
    __slots__ = ("tp",)

    def __init__(self, tp: TopicPartition) -> None:
        super().__init__()
        self.tp = tp


class Accumulator:
    def __init__(self, *, batch_size: int, linger_ms: int, compression: Compression, buffer_memory: int) -> None:
        self.batch_size = batch_size
        self.linger = linger_ms / 1000
        self.compression = compression
        self.buffer_memory = buffer_memory
        self.queues: dict[TopicPartition, _PartitionQueue] = {}
        # The same deques by topic then partition: append() finds its queue without building a
        # TopicPartition per record.
        self._by_topic: dict[str, dict[int, _PartitionQueue]] = {}
        self.bytes_held = 0
        self.sealed = False  # a batch became full since the producer last looked: it may go now
        self.flushes = 0  # flush() calls in progress: everything is ready meanwhile
        self.produce_error: BaseException | None = None  # see release()
        self.data_ready = asyncio.Event()  # wakes the sender
        self._room = asyncio.Event()
        self._room.set()

    async def wait_for_room(self) -> None:
        while self.bytes_held >= self.buffer_memory:
            self._room.clear()
            await self._room.wait()

    def try_append_open(self, topic: str, partition: int, timestamp: int, key: bytes | None,
                        value: bytes | None) -> int:
        """The common case of ``append`` (``Producer.produce``'s synchronous path): add a record without
        headers or future to the partition's open batch if there is one with room for it and the buffer
        is not full; the bytes it took, or -1 (nothing done) to go the whole way through ``append``."""
        partitions = self._by_topic.get(topic)
        queue = partitions.get(partition) if partitions is not None else None
        if not queue or self.bytes_held >= self.buffer_memory:
            return -1
        batch = queue[-1]
        if batch.closed or batch.arrow_rows:
            return -1
        builder = batch.builder
        added = builder.try_append(timestamp, key, value, None, self.batch_size)
        if added >= 0:
            self.bytes_held += added
            if builder.size >= self.batch_size:
                self._close(batch)
        return added

    def append(self, topic: str, partition: int, timestamp: int, key: bytes | None, value: bytes | None,
               headers: list[tuple[str, bytes | None]] | None, future: asyncio.Future[RecordMetadata] | None,
               loop: asyncio.AbstractEventLoop) -> int:
        """Add one record to the partition's open batch, opening one if needed; the bytes it took."""
        partitions = self._by_topic.get(topic)
        queue = partitions.get(partition) if partitions is not None else None
        if queue is None:
            queue = self._queue(TopicPartition(topic, partition))
        batch = queue[-1] if queue else None
        added = -1
        if batch is not None and not batch.closed:
            added = batch.try_append(timestamp, key, value, headers, future, self.batch_size)
            if added < 0:  # does not fit: this batch is done
                self._close(batch)
        if batch is None or added < 0:  # no batch, a closed one (added is -1), or this one is full
            batch = self._open(queue, loop)
            added = batch.try_append(timestamp, key, value, headers, future, -1)
        self.bytes_held += added
        if batch.builder.size >= self.batch_size:
            self._close(batch)
        return added

    def append_arrow(self, topic: str, partition: int, timestamp: int, keys: ArrowColumn, values: ArrowColumn,
                     length: int, rows: bytes, start: int,
                     loop: asyncio.AbstractEventLoop) -> tuple[int, ProducerBatch]:
        """Add Arrow rows ``rows[start:]`` (int32 row numbers, see ``ProducerBatch.append_arrow``) to the
        partition's open batch until it is full; (the position to go on from, the batch they went to)."""
        queue = self._queue(TopicPartition(topic, partition))
        batch = queue[-1] if queue else None
        if batch is None or batch.closed:
            batch = self._open(queue, loop)
        before = batch.size
        position = batch.append_arrow(timestamp, keys, values, length, rows, start, self.batch_size)
        self.bytes_held += batch.size - before
        if batch.size >= self.batch_size:
            self._close(batch)
        return position, batch

    def _open(self, queue: _PartitionQueue, loop: asyncio.AbstractEventLoop) -> ProducerBatch:
        # the batch's memory doubles up to batch_size (a body that grew record by record was copied ~8 times)
        batch = ProducerBatch(queue.tp, self.compression, time.monotonic(), loop, self.batch_size)
        queue.append(batch)
        self.bytes_held += batch.size  # its header; released with the batch's whole size
        self.data_ready.set()  # the sender times this batch's linger
        return batch

    def _queue(self, tp: TopicPartition) -> _PartitionQueue:
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = _PartitionQueue(tp)
            self._by_topic.setdefault(tp.topic, {})[tp.partition] = queue
        return queue

    def _close(self, batch: ProducerBatch) -> None:
        batch.closed = True
        self.sealed = True
        self.data_ready.set()

    def ready(self, now: float) -> tuple[list[TopicPartition], float | None]:
        """Partitions whose head batch may go now, and how long until the next one may."""
        ready: list[TopicPartition] = []
        wait: float | None = None
        for tp, queue in self.queues.items():
            if not queue:
                continue
            head = queue[0]
            due = head.retry_at if head.attempts else head.created + self.linger
            if due <= now or (not head.attempts and (head.closed or len(queue) > 1 or self.flushes)):
                ready.append(tp)
            else:
                wait = due - now if wait is None else min(wait, due - now)
        return ready, wait

    def head(self, tp: TopicPartition) -> ProducerBatch:
        return self.queues[tp][0]

    def pop_head(self, tp: TopicPartition) -> ProducerBatch:
        batch = self.queues[tp].popleft()
        batch.closed = True
        return batch

    def requeue(self, batch: ProducerBatch) -> None:
        """Put a batch back for a retry, ahead of every batch with a later sequence."""
        queue = self._queue(batch.tp)
        index = 0
        while index < len(queue) and 0 <= queue[index].base_sequence < batch.base_sequence:
            index += 1
        queue.insert(index, batch)
        self.data_ready.set()

    def release(self, batch: ProducerBatch) -> None:
        """A batch is done (acknowledged or failed): its bytes no longer count. The first error of a batch
        holding records without futures (Producer.produce) is kept for the next flush() to raise."""
        if batch.anonymous and batch.error is not None and self.produce_error is None:
            self.produce_error = batch.error
        self.bytes_held -= batch.size
        if self.bytes_held < self.buffer_memory:
            self._room.set()

    def all_batches(self) -> Iterator[ProducerBatch]:
        for queue in self.queues.values():
            yield from queue
