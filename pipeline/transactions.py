"""The sink's side of Kafka transactions, on the raw protocol (the client has no transactions yet).

A task's ``TransactionalWriter`` takes its transactional id with InitProducerId
(which fences every earlier holder of the id and aborts its open
transaction), adds partitions with AddPartitionsToTxn, produces transactional
batches, and stops after the last acknowledgement: it never sends EndTxn.
The driver ends the transaction later with ``end_transaction``, naming the
producer id and epoch the task reported (Flink's Kafka sink resumes a
transaction the same way). Only standard requests (InitProducerId v0-4,
AddPartitionsToTxn v0-3, Produce, EndTxn v0-3), so Apache Kafka serves them too.

Each partition's batches go out through a ``PartitionLane`` (produce_lane.py):
in sequence order, up to five Produce requests in flight, as Kafka's idempotent
producer; a task's partitions are written concurrently.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from weir.client.cluster import TRANSACTION, Cluster
from weir.client.errors import BrokerResponseError, KafkaConnectionError, KafkaTimeoutError, raise_for
from weir.client.partitioner import partition_for_key, partition_rows
from weir.client.types import TopicPartition
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import add_partitions_to_txn, end_txn
from weir.protocol.messages import init_producer_id as init_producer_id_message
from weir.protocol.record_builder import BatchBuilder

from .produce_lane import MAX_IN_FLIGHT, PartitionLane, Shipped

# Answers that mean "ask again" (after finding the coordinator again for the first two).
_REDISCOVER = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})
_RETRY = frozenset({Errors.CONCURRENT_TRANSACTIONS, Errors.COORDINATOR_LOAD_IN_PROGRESS}) | _REDISCOVER
_SEQUENCE_MODULUS = 1 << 31


async def _to_coordinator(cluster: Cluster, transactional_id: str, api_key: ApiKey, build, error_of, *,
                          timeout: float):
    """Send a coordinator request, retrying the answers Kafka's clients retry, until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            node = await cluster.coordinator(TRANSACTION, transactional_id)
            response = await cluster.send(node, api_key, build)
            code = error_of(response)
        except (KafkaConnectionError, KafkaTimeoutError):
            code = Errors.COORDINATOR_NOT_AVAILABLE
        except BrokerResponseError as exc:
            # FindCoordinator's own answer: Kafka gives COORDINATOR_NOT_AVAILABLE until the transaction
            # state partition is loaded (after a start or a restart), which its producer retries.
            if exc.code not in _RETRY:
                raise
            code = exc.code
        if code not in _RETRY:
            return response, code
        if code in _REDISCOVER:
            cluster.forget_coordinator(TRANSACTION, transactional_id)
        if time.monotonic() >= deadline:
            raise_for(code, f"{api_key.name} for {transactional_id} did not succeed in {timeout}s")
        await asyncio.sleep(cluster.retry_backoff)  # retry.backoff.ms


async def init_producer_id(cluster: Cluster, transactional_id: str, transaction_timeout_ms: int, *,
                           timeout: float = 60.0) -> tuple[int, int]:
    """Take ``transactional_id``: fences its earlier holders and aborts their open transaction.
    Returns (producer id, epoch); epoch 0 with a fresh id means nobody held it before."""
    response, code = await _to_coordinator(
        cluster, transactional_id, ApiKey.INIT_PRODUCER_ID,
        lambda _v: init_producer_id_message.REQUEST(transactional_id=transactional_id,
                                            transaction_timeout_ms=transaction_timeout_ms),
        lambda r: r.error_code, timeout=timeout)
    raise_for(code, f"InitProducerId {transactional_id}")
    return response.producer_id, response.producer_epoch


async def end_transaction(cluster: Cluster, transactional_id: str, producer_id: int, producer_epoch: int,
                          commit: bool, *, timeout: float = 60.0) -> int:
    """EndTxn for a transaction another process (a task) wrote; returns the error code.

    Retrying a commit that already completed with the same epoch is answered with
    success by Kafka's coordinator, so a roll-forward may be repeated."""
    _response, code = await _to_coordinator(
        cluster, transactional_id, ApiKey.END_TXN,
        lambda _v: end_txn.REQUEST(transactional_id=transactional_id, producer_id=producer_id,
                                   producer_epoch=producer_epoch, committed=commit),
        lambda r: r.error_code, timeout=timeout)
    return code


class TransactionalWriter:
    """One task's open transaction: write, flush, and leave it for the driver to end."""

    def __init__(self, cluster: Cluster, transactional_id: str, *, transaction_timeout_ms: int = 60000,
                 batch_size: int = 16384, produce_timeout_ms: int = 30000, buffer_memory: int = 32 * 1024 * 1024,
                 max_in_flight: int = MAX_IN_FLIGHT):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.batch_size = batch_size
        self.produce_timeout_ms = produce_timeout_ms
        self.producer_id = -1
        self.producer_epoch = -1
        self.records = 0
        self._added: set[TopicPartition] = set()
        self._sequences: dict[TopicPartition, int] = {}
        self._open: dict[TopicPartition, BatchBuilder] = {}
        self.max_in_flight = max_in_flight
        self._lanes: dict[TopicPartition, PartitionLane] = {}
        self._round_robin: dict[str, int] = {}
        self._counts: dict[str, int] = {}
        self.buffer_memory = buffer_memory  # bytes of closed batches not yet acknowledged (buffer.memory)
        self._unacked: deque[tuple[asyncio.Future, int]] = deque()
        self._unacked_bytes = 0

    @property
    def partitions(self) -> list[TopicPartition]:
        return sorted(self._added)

    async def begin(self) -> None:
        await self.cluster.refresh([])
        self.producer_id, self.producer_epoch = await init_producer_id(
            self.cluster, self.transactional_id, self.transaction_timeout_ms)

    async def partition_count(self, topic: str) -> int:
        """The topic's partition count, asked once per writer: a task's transaction is short, and
        Kafka's producer also partitions on the metadata it has (refreshed on its metadata.max.age.ms)."""
        count = self._counts.get(topic)
        if count is None:
            count = self._counts[topic] = await self.cluster.partitions_for(topic)
        return count

    def _partition(self, topic: str, key: bytes | None, count: int) -> int:
        if key is not None:
            return partition_for_key(key, count)
        # Null keys: round-robin over the partitions (the Java producer's sticky partitioner spreads
        # them per batch; per record is simpler and spreads them as evenly).
        turn = self._round_robin.get(topic, -1) + 1
        self._round_robin[topic] = turn
        return turn % count

    async def partition_for(self, topic: str, key: bytes | None) -> int:
        return self._partition(topic, key, await self.partition_count(topic))

    async def append(self, topic: str, partition: int | None, key: bytes | None, value: bytes | None,
                     headers, timestamp_ms: int) -> None:
        await self.append_all(((topic, partition, key, value, headers, timestamp_ms),))

    async def append_all(self, rows) -> None:
        """Append (topic, partition or None, key, value, headers, timestamp ms) rows.

        Hot path: per row only synchronous work (partition, encode); it awaits only to add a
        partition to the transaction, to learn a topic's partition count, or when buffer.memory is full."""
        counts = self._counts
        opened = self._open
        batch_size = self.batch_size
        partition_of = self._partition
        appended = 0
        try:
            for topic, partition, key, value, headers, timestamp_ms in rows:
                if partition is None:
                    count = counts.get(topic)
                    if count is None:
                        count = await self.partition_count(topic)
                    partition = partition_of(topic, key, count)
                builder = opened.get((topic, partition))  # a TopicPartition equals its plain tuple
                if builder is None:
                    tp = TopicPartition(topic, partition)
                    if tp not in self._added:
                        await self._add_partition(tp)
                    builder = opened[tp] = BatchBuilder()
                builder.append(timestamp_ms, key, value, headers)
                appended += 1
                if builder.size >= batch_size:
                    self._ship(TopicPartition(topic, partition))
                    await self._wait_for_buffer()
        finally:
            self.records += appended

    async def append_arrow(self, topic: str, keys, values, length: int, timestamp_ms: int) -> None:
        """Append ``length`` rows of Arrow key/value columns (``protocol.record_builder.arrow_column`` specs)
        to ``topic``, partitioned by key: grouped by partition in C, then encoded in one C call per batch."""
        count = await self.partition_count(topic)
        groups, self._round_robin[topic] = partition_rows(keys, length, count, self._round_robin.get(topic, -1))
        batch_size = self.batch_size
        for partition, rows in enumerate(groups):
            position, end = 0, len(rows) // 4
            if not end:
                continue
            tp = TopicPartition(topic, partition)
            if tp not in self._added:
                await self._add_partition(tp)
            while position < end:
                builder = self._open.get(tp)
                if builder is None:
                    builder = self._open[tp] = BatchBuilder()
                appended = builder.append_arrow(timestamp_ms, keys, values, length, rows, position, batch_size)
                self.records += appended - position
                position = appended
                if builder.size >= batch_size:
                    self._ship(tp)
                    await self._wait_for_buffer()

    async def _wait_for_buffer(self) -> None:
        while self._unacked_bytes > self.buffer_memory:  # the caller waits, as a full buffer.memory does
            acked, size = self._unacked.popleft()
            await acked
            self._unacked_bytes -= size

    async def _add_partition(self, tp: TopicPartition) -> None:
        await self.cluster.partitions_for(tp.topic)

        def error_of(response):
            codes = [p.partition_error_code for t in response.results_by_topic_v3_and_below
                     for p in t.results_by_partition]
            return next((c for c in codes if c), Errors.NONE)
        _response, code = await _to_coordinator(
            self.cluster, self.transactional_id, ApiKey.ADD_PARTITIONS_TO_TXN,
            lambda _v: add_partitions_to_txn.REQUEST(
                v3_and_below_transactional_id=self.transactional_id, v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.producer_epoch,
                v3_and_below_topics=[add_partitions_to_txn.Topic(name=tp.topic, partitions=[tp.partition])]),
            error_of, timeout=self.produce_timeout_ms / 1000)
        raise_for(code, f"AddPartitionsToTxn {tp}")
        self._added.add(tp)

    def _ship(self, tp: TopicPartition) -> None:
        """Close the open batch of ``tp`` and hand it to the partition's lane, after its previous ones."""
        builder = self._open.pop(tp)
        sequence = self._sequences.get(tp, 0)
        self._sequences[tp] = (sequence + builder.count) % _SEQUENCE_MODULUS
        data = builder.build(producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                             base_sequence=sequence, transactional=True)
        lane = self._lanes.get(tp)
        if lane is None:
            lane = self._lanes[tp] = PartitionLane(self.cluster, tp, self.transactional_id,
                                                   produce_timeout_ms=self.produce_timeout_ms,
                                                   max_in_flight=self.max_in_flight)
        acked = asyncio.get_running_loop().create_future()
        lane.push(Shipped(data, builder.count, acked))
        self._unacked.append((acked, len(data)))
        self._unacked_bytes += len(data)

    async def flush(self) -> None:
        """Send what is buffered and wait for every acknowledgement; the transaction stays open."""
        for tp in list(self._open):
            self._ship(tp)
        waiting = [acked for acked, _size in self._unacked]
        self._unacked.clear()
        self._unacked_bytes = 0
        results = await asyncio.gather(*waiting, return_exceptions=True)
        failure = next((r for r in results if isinstance(r, BaseException)), None)
        if failure is not None:
            raise failure
