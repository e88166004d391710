"""Drains ready batches into Produce requests and settles their outcome.

Each pass groups ready partitions by leader and sends requests with at most one
batch per partition each, keeping up to ``max_in_flight`` requests outstanding
per broker; requests are written in order on one connection, so a partition's
batches reach the broker in order. Passes run in the sender's task, and also
synchronously (``send_now``) when an answer frees a slot and when ``send()``
fills a batch: the caller's sends and the sender share one thread, so without
that the next request would wait for the caller to yield.

With idempotence every batch carries (producer id, epoch, base sequence),
fixed when it is first sent. The rules that keep that exactly-once through
errors (the Java client's, which aiokafka's issue 1017 lacks):

- A retriable failure puts the batch back in sequence order; the partition
  then sends nothing new until its in-flight batches have answered, so the
  retries go out in order (later batches come back OUT_OF_ORDER_SEQUENCE,
  which for them only means "a predecessor is missing" and is retried too).
- A batch that can no longer be delivered with its sequence (a real gap,
  UNKNOWN_PRODUCER_ID, a permanent error, an expired batch that was sent)
  needs an epoch bump (KIP-360): new sends stop until nothing is in flight,
  InitProducerId bumps the epoch, every partition's sequence restarts at 0
  and unsent batches are renumbered.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import produce

from ..cluster import Cluster
from ..connection import Connection
from ..errors import BrokerResponseError, KafkaConnectionError, KafkaException, KafkaTimeoutError
from ..types import TopicPartition
from .accumulator import Accumulator
from .batch import ProducerBatch
from .outcomes import BatchOutcomes, PartitionSequence
from .transaction_manager import TransactionAbortedError, TransactionManager, TxnState

log = logging.getLogger(__name__)

_SEQUENCE_MODULUS = 1 << 31
_MAX_EPOCH = 32767

# A transaction in these states sends nothing more: its queued batches fail.
_NOTHING_MORE = frozenset({TxnState.ABORTABLE_ERROR, TxnState.ABORTING_TRANSACTION, TxnState.FATAL_ERROR})


@dataclass
class ProducerIdentity:
    producer_id: int = -1
    producer_epoch: int = -1


class Sender(BatchOutcomes):
    def __init__(self, cluster: Cluster, accumulator: Accumulator, *, acks: int, idempotent: bool,
                 request_timeout_ms: int, max_in_flight: int, delivery_timeout_ms: int, retry_backoff_ms: int,
                 max_request_size: int, init_producer_id: Callable[[ProducerIdentity], Awaitable[None]],
                 transactional_id: str | None = None) -> None:
        # With a transactional id the producer sets ``txn`` (its TransactionManager) before start().
        self.cluster = cluster
        self.accumulator = accumulator
        self.acks = acks
        self.idempotent = idempotent
        self.timeout_ms = request_timeout_ms
        self.max_in_flight = max_in_flight
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.retry_backoff = retry_backoff_ms / 1000
        self.max_request_size = max_request_size
        self.transactional_id = transactional_id
        self.identity = ProducerIdentity()
        self._init_producer_id = init_producer_id  # async (identity) -> None, bumps or allocates
        self._sequences: dict[TopicPartition, PartitionSequence] = {}
        self._in_flight_per_node: dict[int, int] = {}
        self._pending: set[asyncio.Future[Any]] = set()  # Produce requests awaiting their answers
        self.in_flight: set[ProducerBatch] = set()  # sent, not yet settled
        self.retries = 0  # batches sent again (the Java client's record-retry-total, per batch)
        self.requests = 0  # Produce requests written (request-total)
        self._bump_required = False
        self._metadata_wanted = False
        self._closing = False
        self.fatal_error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self.txn: TransactionManager | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        """Send what is queued, then stop."""
        self._closing = True
        self.accumulator.data_ready.set()
        if self._task is not None:
            await self._task

    def wake(self) -> None:
        self.accumulator.data_ready.set()

    @property
    def requests_in_flight(self) -> int:
        return len(self._pending)

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        ready_event = self.accumulator.data_ready
        while True:
            now = time.monotonic()
            try:
                self._expire(now)
                if self._metadata_wanted:
                    await self._refresh_metadata()
                if self._bump_required and not self._pending:
                    await self._bump_epoch()
                wait = await self._send_ready(now)
            except Exception:  # the sender must outlive any one bad pass, or deliveries hang
                log.exception("producer sender pass failed; retrying")
                wait = self.retry_backoff
            if self._closing and not self._pending and not any(True for _ in self.accumulator.all_batches()):
                return
            ready_event.clear()
            try:
                async with asyncio.timeout(wait):
                    await ready_event.wait()
            except TimeoutError:
                pass

    async def _send_ready(self, now: float) -> float:
        """Send what may go now; how long until something else may (for the wait)."""
        if self._bump_required:
            return self.retry_backoff
        ready, wait = self.accumulator.ready(now)
        wait = wait if wait is not None else 1.0
        if self.txn is not None and (ready or self.txn.state in _NOTHING_MORE):
            ready = await self._join_transaction(self.txn, ready)
        for node, partitions in self._by_leader(ready).items():
            if self._in_flight_per_node.get(node, 0) >= self.max_in_flight:
                continue
            try:  # the connection first: nothing is taken off a queue across an await
                connection = await self.cluster.connection(node)
                if self.acks == 0:
                    await self._send_unacknowledged(connection, self._take_batches(partitions))
                elif not self._dispatch(node, connection, partitions):
                    wait = min(wait, self.retry_backoff)
                    continue
                await connection.drain()
            except KafkaException as exc:
                log.debug("produce to broker %d could not be sent: %s", node, exc)
                self._metadata_wanted = True
        self.send_now()  # more requests while slots are free
        if self._metadata_wanted:
            wait = min(wait, self.retry_backoff)
        return max(wait, 0.0)

    def send_now(self) -> None:
        """Put what is ready on the wire at once, without waiting for the sender task's turn.

        Called when a response has settled (before the callers it frees get the loop, so the
        next request leaves first and max_in_flight stays full) and when ``send()`` fills a
        batch. Only what needs no await goes here: connections already open, partitions
        already in the transaction, nothing while a bump or a metadata refresh is pending; the
        sender task does the rest on its next pass."""
        if self._task is None or self._bump_required or self._metadata_wanted or self.acks == 0:
            return
        now = time.monotonic()
        while self._send_round(now):  # one batch per partition per request: go on while slots are free
            pass

    def _send_round(self, now: float) -> bool:
        """One request to each broker with a free slot and ready partitions; whether any went."""
        ready, _ = self.accumulator.ready(now)
        txn = self.txn
        if txn is not None:
            if txn.state in _NOTHING_MORE:
                return False
            ready = txn.sendable(ready)
        sent = False
        for node, partitions in self._by_leader(ready).items():
            if self._in_flight_per_node.get(node, 0) >= self.max_in_flight:
                continue
            connection = self.cluster.open_connection(node)
            if connection is not None:
                try:
                    sent = self._dispatch(node, connection, partitions) or sent
                except KafkaException as exc:  # written nothing: the task's next pass sees to it
                    log.debug("produce to broker %d could not be sent: %s", node, exc)
        return sent

    def _by_leader(self, ready: list[TopicPartition]) -> dict[int, list[TopicPartition]]:
        by_node: dict[int, list[TopicPartition]] = {}
        for tp in ready:
            leader = self.cluster.leader(*tp)
            if leader < 0:
                self._metadata_wanted = True
                continue
            by_node.setdefault(leader, []).append(tp)
        return by_node

    async def _join_transaction(self, txn: TransactionManager, ready: list[TopicPartition]) -> list[TopicPartition]:
        """The ready partitions that may be sent in the transaction, after one AddPartitionsToTxn
        for those new to it; in an error state or while aborting, queued batches fail instead."""
        if txn.state not in _NOTHING_MORE:
            missing = {tp for tp in ready if tp not in txn.partitions}
            if not missing or await txn.add_partitions(missing):
                return ready
        self._fail_undrained(txn, txn.last_error or TransactionAbortedError(
            f"transaction of {self.transactional_id} aborted before the batch was sent"))
        return []

    def _fail_undrained(self, txn: TransactionManager, error: BaseException) -> None:
        for queue in self.accumulator.queues.values():
            while queue:
                batch = queue.popleft()
                if batch.base_sequence >= 0:  # sent before and retried: its sequence leaves a gap
                    txn.require_epoch_bump()
                batch.fail(error)
                self.accumulator.release(batch)

    def reset_sequences(self) -> None:
        """A new producer id or epoch: every partition's sequence starts again at 0."""
        self._sequences.clear()
        for batch in self.accumulator.all_batches():
            batch.base_sequence = -1

    def _take_batches(self, partitions: list[TopicPartition]) -> list[ProducerBatch]:
        batches: list[ProducerBatch] = []
        size = 0
        for tp in partitions:
            queue = self.accumulator.queues.get(tp)
            if not queue:  # drained since it was found ready (send_now ran meanwhile)
                continue
            head = queue[0]
            if self.idempotent:
                state = self._sequences.setdefault(tp, PartitionSequence())
                if state.in_flight and (state.recovering or not state.acknowledged):
                    # Retries go out only once every earlier batch has answered. And a partition's
                    # first batch of an epoch goes alone (stricter than the Java client): Kafka takes
                    # any first sequence from a producer it has no state for, so when that batch
                    # failed (NOT_LEADER_OR_FOLLOWER from a leader still starting) the next one
                    # would be written ahead of it, out of send order.
                    continue
                state.recovering = False
            if batches and size + head.size > self.max_request_size:
                break
            batch = self.accumulator.pop_head(tp)
            if self.idempotent:
                self._assign_sequence(batch, state)
                state.in_flight.append(batch)
            batch.attempts += 1
            self.in_flight.add(batch)
            batches.append(batch)
            size += batch.size
        return batches

    def _assign_sequence(self, batch: ProducerBatch, state: PartitionSequence) -> None:
        if batch.base_sequence >= 0 and batch.producer_epoch == self.identity.producer_epoch:
            return
        batch.producer_id = self.identity.producer_id
        batch.producer_epoch = self.identity.producer_epoch
        batch.base_sequence = state.next_sequence
        state.next_sequence = (state.next_sequence + batch.record_count) % _SEQUENCE_MODULUS

    def _produce_request(self, batches: list[ProducerBatch]) -> Any:
        transactional = self.transactional_id is not None
        topics: dict[str, list[Any]] = {}
        for batch in batches:
            topics.setdefault(batch.tp.topic, []).append(
                produce.PartitionData(index=batch.tp.partition, records=batch.encode(transactional)))
        return produce.REQUEST(
            transactional_id=self.transactional_id, acks=self.acks, timeout_ms=self.timeout_ms,
            topic_data=[produce.TopicData(name=name, partition_data=parts) for name, parts in topics.items()])

    def _produce_version(self, connection: Connection) -> int:
        """Produce v12 in a version-2 transaction (its batches add their partitions, KIP-890), else at most
        v10: as the Java client, whose TV1 Produce is v11, except for TRANSACTION_ABORTABLE's promise."""
        if self.txn is not None and self.txn.transaction_version >= 2:
            return connection.version_for(ApiKey.PRODUCE, transaction_version=2)
        return connection.version_for(ApiKey.PRODUCE, 10)

    def _dispatch(self, node: int, connection: Connection, partitions: list[TopicPartition]) -> bool:
        """Take one batch of each partition (those that may go) and write them as one request,
        with no await between taking and writing (so batches leave in queue order); whether
        a request went."""
        batches = self._take_batches(partitions)
        if not batches:
            return False
        request = self._produce_request(batches)
        try:
            future = connection.submit(ApiKey.PRODUCE, self._produce_version(connection), request)
        except KafkaException as exc:
            self._metadata_wanted = True
            for batch in batches:
                self._retry(batch, exc, sent=False)
            raise
        self.requests += 1
        self._in_flight_per_node[node] = self._in_flight_per_node.get(node, 0) + 1
        self._pending.add(future)
        timer = future.get_loop().call_later(self.timeout_ms / 1000 + 5, self._timed_out, node, connection, future)
        future.add_done_callback(functools.partial(self._on_response, node, batches, timer))
        return True

    async def _send_unacknowledged(self, connection: Connection, batches: list[ProducerBatch]) -> None:
        """acks=0: the broker answers nothing, so a batch is done once written."""
        if not batches:
            return
        await connection.send(ApiKey.PRODUCE, self._produce_version(connection), self._produce_request(batches))
        for batch in batches:
            self._settle_success(batch, -1, -1)

    def _timed_out(self, node: int, connection: Connection, future: asyncio.Future[Any]) -> None:
        if future.done():
            return
        future.set_exception(KafkaTimeoutError(f"Produce to broker {node} timed out"))
        # Answers after this one would be matched to the wrong requests: the connection goes.
        future.get_loop().create_task(connection.close())

    def _on_response(self, node: int, batches: list[ProducerBatch], timer: asyncio.TimerHandle,
                     future: asyncio.Future[Any]) -> None:
        """A Produce request is answered (or failed): settle its batches, then send what that
        made possible before the callers waiting for room or results get the loop."""
        timer.cancel()
        self._in_flight_per_node[node] -= 1
        self._pending.discard(future)
        try:
            error = KafkaConnectionError("request cancelled") if future.cancelled() else future.exception()
            if error is None:
                self._settle(future.result(), batches)
            else:
                self._fail_request(batches, error if isinstance(error, KafkaException)
                                   else KafkaConnectionError(f"connection lost: {error!r}"))
            self.send_now()
        except Exception:  # a callback's exception would only be logged by the loop: say where
            log.exception("settling a Produce response failed")
        self.wake()

    # ------------------------------------------------------------------ recovery

    def _require_bump(self, why: str) -> None:
        if not self._bump_required:
            log.info("producer epoch bump required: %s", why)
        self._bump_required = True

    async def _bump_epoch(self) -> None:
        """An idempotent producer owns its id alone, so it bumps the epoch itself (as the Java
        client does, KIP-360) and asks for a new id only when the epoch is exhausted."""
        try:
            if self.transactional_id is None and self.identity.producer_epoch < _MAX_EPOCH:
                self.identity.producer_epoch += 1
            else:
                self.identity.producer_id = self.identity.producer_epoch = -1
                await self._init_producer_id(self.identity)
        except BrokerResponseError as exc:
            if exc.fatal:
                self.fatal_error = exc
                self._fail_everything(exc)
                self._bump_required = False
            return  # retriable: tried again on the next pass
        except KafkaException:
            return
        self._bump_required = False
        self._sequences.clear()
        for batch in self.accumulator.all_batches():
            batch.base_sequence = -1  # renumbered under the new epoch when sent
        log.info("producer id %d now at epoch %d", self.identity.producer_id, self.identity.producer_epoch)

    def _fail_everything(self, error: BaseException) -> None:
        for queue in self.accumulator.queues.values():
            while queue:
                batch = queue.popleft()
                batch.fail(error)
                self.accumulator.release(batch)

    async def _refresh_metadata(self) -> None:
        self._metadata_wanted = False
        topics = sorted({tp.topic for tp in self.accumulator.queues})
        try:
            await self.cluster.refresh_once(topics, allow_auto_create=True)  # the sender's passes are its retries
        except KafkaException as exc:
            log.debug("metadata refresh failed: %s", exc)
            self._metadata_wanted = True
            await asyncio.sleep(self.retry_backoff)  # retry.backoff.ms before the next attempt
