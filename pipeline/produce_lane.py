"""One partition's transactional batches on their way to the leader: in sequence order, several in flight.

Kafka's idempotent producer keeps up to ``max.in.flight.requests.per.connection``
(at most 5: the broker remembers the last 5 batches of a producer per partition to
recognise duplicates) Produce requests outstanding, and the lane does the same:

- batches go out in sequence order, on one connection (a connection writes
  requests in the order they are submitted, and answers come back in that order);
- a batch is acknowledged when the broker answers NONE, or DUPLICATE_SEQUENCE_NUMBER
  (it already holds those bytes: an earlier send of them was written);
- when the oldest unacknowledged batch fails with a retriable error (or the
  connection is lost), the rest of the window is left to settle (the broker answers
  OUT_OF_ORDER_SEQUENCE_NUMBER to batches after a rejected one) and the whole window
  is resent from that batch, with the same sequences and bytes;
- any other error of the oldest batch, e.g. OUT_OF_ORDER_SEQUENCE_NUMBER when every
  batch before it was acknowledged (a gap: the broker lost or never got a batch),
  fails the lane and with it the task, rather than write out of order; the driver's
  abort, or the fencing at the next start, ends the transaction.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from weir.client.cluster import Cluster
from weir.client.errors import BrokerResponseError, KafkaConnectionError, KafkaTimeoutError, error_for, raise_for
from weir.client.types import TopicPartition
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import produce

MAX_IN_FLIGHT = 5  # max.in.flight.requests.per.connection: the most Kafka allows with idempotence
_REFRESH = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE, Errors.UNKNOWN_TOPIC_OR_PARTITION})
_ACKED = frozenset({Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER})
_LOST = -1  # no answer: the connection was lost or the request timed out (retriable)


class Shipped:
    """A closed batch: its bytes, its record count, and a future set when the broker acknowledged it."""

    __slots__ = ("data", "count", "acked", "first_sent")

    def __init__(self, data: bytes, count: int, acked: asyncio.Future):
        self.data = data
        self.count = count
        self.acked = acked
        self.first_sent = -1.0


def _retrieve(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # an answer nobody awaits (the lane failed) is not logged as never retrieved


class PartitionLane:
    def __init__(self, cluster: Cluster, tp: TopicPartition, transactional_id: str, *, produce_timeout_ms: int,
                 max_in_flight: int = MAX_IN_FLIGHT):
        self.cluster = cluster
        self.tp = tp
        self.transactional_id = transactional_id
        self.produce_timeout_ms = produce_timeout_ms
        self.max_in_flight = max_in_flight
        self.pending: deque[Shipped] = deque()  # not sent yet, or to be sent again; sequence order
        self.in_flight: deque[tuple[Shipped, asyncio.Future]] = deque()
        self.most_in_flight = 0  # the largest window seen (tests, diagnostics)
        self.failure: BaseException | None = None
        self._connection = None  # the one the window was sent on
        self._task: asyncio.Task | None = None

    def push(self, shipped: Shipped) -> None:
        if self.failure is not None:
            raise self.failure  # a later batch after a gap would only be refused as out of order
        self.pending.append(shipped)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while self.pending or self.in_flight:
                await self._step()
        except BaseException as exc:  # noqa: BLE001 (handed to every batch's waiter; CancelledError too)
            self.failure = exc
            for shipped in [s for s, _ in self.in_flight] + list(self.pending):
                if not shipped.acked.done():
                    shipped.acked.set_exception(exc)
                    shipped.acked.add_done_callback(_retrieve)
            self.in_flight.clear()
            self.pending.clear()
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._task = None  # in the same step as the emptiness check: push() starts a new run

    async def _step(self) -> None:
        try:
            if self.pending and len(self.in_flight) < self.max_in_flight:
                await self._send_more()
            head, answer = self.in_flight[0]
            try:
                async with asyncio.timeout(self.cluster.request_timeout):
                    response = await answer
            except TimeoutError:
                await self._connection.close()  # as Cluster.send does: the window is resent on a new one
                raise KafkaTimeoutError(f"Produce {self.tp} timed out") from None
            code = response.responses[0].partition_responses[0].error_code
        except (KafkaConnectionError, KafkaTimeoutError):
            code = _LOST
        if code in _ACKED:
            self.in_flight.popleft()
            head.acked.set_result(None)
            return
        await self._resend_window(code)

    async def _send_more(self) -> None:
        """Submit pending batches, in order and without awaiting between them, up to the window."""
        await self.cluster.partitions_for(self.tp.topic)
        try:
            connection = self._connection = await self.cluster.connection(self.cluster.leader(*self.tp))
        except BrokerResponseError as exc:  # no leader known yet
            raise KafkaConnectionError(str(exc)) from None
        version = connection.version_for(ApiKey.PRODUCE)
        now = time.monotonic()
        while self.pending and len(self.in_flight) < self.max_in_flight:
            shipped = self.pending[0]
            answer = connection.submit(ApiKey.PRODUCE, version, produce.REQUEST(
                transactional_id=self.transactional_id, acks=-1, timeout_ms=self.produce_timeout_ms,
                topic_data=[produce.TopicData(name=self.tp.topic, partition_data=[
                    produce.PartitionData(index=self.tp.partition, records=shipped.data)])]))
            answer.add_done_callback(_retrieve)
            self.pending.popleft()
            if shipped.first_sent < 0:
                shipped.first_sent = now
            self.in_flight.append((shipped, answer))
        self.most_in_flight = max(self.most_in_flight, len(self.in_flight))
        await connection.drain()

    async def _resend_window(self, code: int) -> None:
        """The oldest batch was not acknowledged: retry the window from it, or fail."""
        head = self.in_flight[0][0] if self.in_flight else self.pending[0]
        if head.first_sent < 0:
            head.first_sent = time.monotonic()
        if code != _LOST and not error_for(code).retriable:
            raise_for(code, f"Produce {self.tp} in transaction {self.transactional_id}")
        if time.monotonic() - head.first_sent >= self.produce_timeout_ms / 1000:
            if code == _LOST:
                raise KafkaTimeoutError(f"Produce {self.tp} in transaction {self.transactional_id}: "
                                        f"no answer within {self.produce_timeout_ms} ms")
            raise_for(code, f"Produce {self.tp} in transaction {self.transactional_id}")
        for _shipped, answer in list(self.in_flight)[1:]:
            try:  # the later answers of the window come first: the connection answers in order
                async with asyncio.timeout(self.cluster.request_timeout):
                    await answer
            except (KafkaConnectionError, TimeoutError):
                pass
        self.pending.extendleft(reversed([shipped for shipped, _ in self.in_flight]))
        self.in_flight.clear()
        if code == _LOST or code in _REFRESH:
            try:
                await self.cluster.refresh([self.tp.topic])
            except (KafkaConnectionError, KafkaTimeoutError):
                pass  # the next send finds out again
        await asyncio.sleep(self.cluster.retry_backoff)  # retry.backoff.ms
