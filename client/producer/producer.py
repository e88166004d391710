"""The asyncio Producer: ``send()`` fills per-partition batches that one sender drains.

    async with Producer("127.0.0.1:9092") as producer:
        delivery = await producer.send("orders", b"order 1", key=b"customer-7")
        metadata = await delivery          # RecordMetadata(topic, partition, offset, timestamp)

Idempotence is on by default, as in the Java client since 3.0: retries never
duplicate or reorder a partition's records. Settings carry the Java client's
names in snake_case and its defaults, except batch_size (see DEFAULT_BATCH_SIZE).

Transactions (``transactional_id=...``): ``start()`` calls ``init_transactions()``
itself, as aiokafka's producer does (it fences older producers with the same id
and aborts what they left open), so a started producer is ready to begin:

    async with Producer(servers, transactional_id="orders-1") as producer:
        async with producer.transaction():          # commits on exit, aborts on an exception
            await producer.send("confirmations", b"...")
            await producer.send_offsets_to_transaction(offsets, consumer.group_metadata())

Errors carry ``fatal`` / ``abortable`` as the Java client classifies them: after an
abortable one, ``abort_transaction()`` and go on; after a fatal one (fenced by a
newer producer with the same id) the producer can only be closed.

``prepare_transaction()`` hands an open transaction to another process instead of
ending it (see handoff.py); ``send_arrow()`` appends rows of Arrow key/value
columns, encoded in C, for writers that hold their data as Arrow (the Spark sink).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Unpack
from collections.abc import AsyncIterator, Awaitable, Mapping

from weir.protocol.api_keys import ApiKey
from weir.protocol.compression import Compression
from weir.protocol.messages import init_producer_id
from weir.protocol.records import HEADER_SIZE

from ..calls import ANY_BROKER
from ..cluster import Cluster
from ..errors import IllegalStateError, KafkaException, MessageTooLargeError, raise_for
from ..partitioner import StickyPartitioner, partition_for_key, partition_rows
from ..types import OffsetAndMetadata, RecordMetadata, TopicPartition
from .accumulator import Accumulator
from .sender import ProducerIdentity, Sender
from .batch import ProducerBatch, record_size_bound
from .transaction_manager import PreparedTxnState, TransactionManager, TxnState
from ..security import ClientSecurity, SecurityOptions

if TYPE_CHECKING:
    from weir.protocol.record_builder import ArrowColumn

    from ..consumer.group import GroupMetadata

log = logging.getLogger(__name__)

_ACKS = {"all": -1, -1: -1, "-1": -1, 0: 0, "0": 0, 1: 1, "1": 1}
_CODECS = {None: Compression.NONE, "none": Compression.NONE, "gzip": Compression.GZIP,
           "snappy": Compression.SNAPPY, "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


# Not the Java client's 16384: a request costs this client (and a Python broker) far more than it
# costs the JVM, and at 16 KiB a busy producer sends one request per 15 records of 1 KiB. 256 KiB
# gave 2-2.5x the records/s on this project's bench (bench/client.py); linger_ms still bounds the
# wait, so a quiet producer's latency is unchanged. librdkafka's default is 1,000,000 bytes; a
# batch this size stays well within Kafka's message.max.bytes default (1 MiB).
DEFAULT_BATCH_SIZE = 256 * 1024


class Producer:
    """Sends records to Kafka topics; idempotent by default, transactional with ``transactional_id``.

    Settings are the Java producer's in snake_case, with its defaults (``batch_size`` excepted:
    256 KiB). ``security_protocol``, ``ssl_context``, ``sasl_*`` as aiokafka takes them. An async
    context manager: ``async with Producer(...)`` starts it (and takes the transactional id) and
    closes it (flushing what is queued)."""
    def __init__(self, bootstrap_servers: str | list[str] = "127.0.0.1:9092", *, client_id: str = "weir-python",
                 acks: str | int = "all", enable_idempotence: bool = True, linger_ms: int = 5,
                 batch_size: int = DEFAULT_BATCH_SIZE, compression_type: str | None = None, max_in_flight: int = 5,
                 buffer_memory: int = 32 * 1024 * 1024, max_request_size: int = 1048576,
                 request_timeout_ms: int = 30000, delivery_timeout_ms: int = 120000, retry_backoff_ms: int = 100,
                 retry_backoff_max_ms: int = 1000,
                 partitioner: StickyPartitioner | None = None, transactional_id: str | None = None,
                 transaction_timeout_ms: int = 60000, max_block_ms: int = 60000,
                 **security: Unpack[SecurityOptions]):
        if acks not in _ACKS:
            raise ValueError(f"acks must be 'all', -1, 0 or 1, not {acks!r}")
        if compression_type not in _CODECS:
            raise ValueError(f"unknown compression_type {compression_type!r}")
        self.acks = _ACKS[acks]
        if enable_idempotence and self.acks != -1:
            raise ValueError("enable_idempotence requires acks='all' (as the Java client requires)")
        if enable_idempotence and not 1 <= max_in_flight <= 5:
            raise ValueError("enable_idempotence allows at most 5 requests in flight per connection")
        if transactional_id is not None and not enable_idempotence:
            raise ValueError("a transactional producer is idempotent: enable_idempotence must stay True")
        self.idempotent = enable_idempotence
        self.cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                               retry_backoff_ms=retry_backoff_ms, retry_backoff_max_ms=retry_backoff_max_ms,
                               security=ClientSecurity.from_options(**security))
        self.accumulator = Accumulator(batch_size=batch_size, linger_ms=linger_ms,
                                       compression=_CODECS[compression_type], buffer_memory=buffer_memory)
        self.partitioner = partitioner or StickyPartitioner(batch_size)
        self.max_request_size = max_request_size
        self.max_block = max_block_ms / 1000
        self.sender = Sender(self.cluster, self.accumulator, acks=self.acks, idempotent=self.idempotent,
                             request_timeout_ms=request_timeout_ms, max_in_flight=max_in_flight,
                             delivery_timeout_ms=delivery_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                             max_request_size=max_request_size, init_producer_id=self._init_producer_id,
                             transactional_id=transactional_id)
        self.transactional_id = transactional_id
        self.transaction_manager: TransactionManager | None = None if transactional_id is None else TransactionManager(
            self.cluster, self.sender.identity, transactional_id, transaction_timeout_ms=transaction_timeout_ms,
            max_block_ms=max_block_ms, on_epoch_bump=self.sender.reset_sequences)
        self.sender.txn = self.transaction_manager
        # produce() takes its synchronous path only between start() and close(), and only if every record
        # that fits an open batch passes _append's size checks: a record_size_bound exceeds the record's
        # encoding by at most 14 bytes, and the batch header (61) is counted in the batch's size.
        self._fits_any_request = batch_size + 64 <= min(max_request_size, buffer_memory)
        self._fast_path = False
        self._done: asyncio.Future[None]  # awaited by produce()'s synchronous path: done at start()
        self._arrow_turns: dict[str, int] = {}  # per topic, the last partition a null-key Arrow row went to
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Reach the cluster, get a producer id (with idempotence) and start the sender."""
        if self._started:
            return
        await self.cluster.refresh([])
        if self.transaction_manager is not None:
            await self.init_transactions()
        elif self.idempotent:
            await self._init_producer_id(self.sender.identity)
        self._loop = asyncio.get_running_loop()
        self._done = self._loop.create_future()
        self._done.set_result(None)
        self.sender.start()
        self._started = True
        self._fast_path = self._fits_any_request

    async def close(self) -> None:
        """Deliver everything sent so far, then close the connections."""
        if self._closed:
            return
        self._closed = True
        self._fast_path = False
        txn = self.transaction_manager
        if self._started and txn is not None and txn.in_transaction and txn.state is not TxnState.FATAL_ERROR:
            try:  # the Java client leaves an open transaction to time out; aborting frees its partitions now
                await self.abort_transaction()
            except KafkaException as exc:
                log.info("abort on close failed: %s", exc)
        if self._started:
            await self.sender.close()
        await self.cluster.close()

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _init_producer_id(self, identity: ProducerIdentity) -> None:
        """Allocate a new producer id (epoch 0) for this idempotent producer.

        Retriable answers are asked again until max_block_ms (a broker that has just started
        answers COORDINATOR_LOAD_IN_PROGRESS until its producer id block arrives)."""
        response = await self.cluster.call(ANY_BROKER, ApiKey.INIT_PRODUCER_ID, lambda _v: init_producer_id.REQUEST(
            transactional_id=None, transaction_timeout_ms=-1), deadline=time.monotonic() + self.max_block)
        raise_for(response.error_code, "InitProducerId", request=ApiKey.INIT_PRODUCER_ID)
        identity.producer_id, identity.producer_epoch = response.producer_id, response.producer_epoch

    # ------------------------------------------------------------------ sending

    def _check_can_send(self) -> None:
        if not self._started or self._closed:
            raise IllegalStateError("the producer is not started" if not self._started else "the producer is closed")
        if self.sender.fatal_error is not None:
            raise self.sender.fatal_error
        if self.transaction_manager is not None:
            self.transaction_manager.require_transaction("send")

    def _known_partition_count(self, topic: str) -> int:
        """The topic's partition count in the metadata we hold; 0 when we hold none."""
        info = self.cluster.topics.get(topic)
        return len(info.partitions) if info is not None and not info.error and info.partitions else 0

    async def _partition_count(self, topic: str) -> int:
        return self._known_partition_count(topic) or \
            await self.cluster.partitions_for(topic, deadline=time.monotonic() + self.max_block)

    async def _send_sealed(self) -> None:
        """A batch became full: put it on the wire now if a request slot is free, and give the loop one
        turn so answers that came meanwhile are settled and the next requests follow them. In the Java
        client the sender thread would send it now; here the sender shares this thread, and without
        this a caller sending in a tight loop would fill the whole buffer before the first request left."""
        self.accumulator.sealed = False
        self.sender.send_now()
        await asyncio.sleep(0)

    async def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, *,
                   partition: int | None = None, headers: list[tuple[str, bytes | None]] | None = None,
                   timestamp_ms: int | None = None) -> asyncio.Future[RecordMetadata]:
        """Queue one record; the returned future resolves to its RecordMetadata once acknowledged."""
        future = self._loop.create_future()  # the loop cached at start(): get_running_loop() costs a getpid()
        await self._append(topic, value, key, partition, headers, timestamp_ms, future)
        return future

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, *,
                partition: int | None = None, headers: list[tuple[str, bytes | None]] | None = None,
                timestamp_ms: int | None = None) -> Awaitable[None]:
        """Queue one record with no future of its own, as librdkafka's produce without a delivery
        callback: the caller learns the outcome per batch, from ``flush()``, which raises the first error of
        the batches holding such records. About half of ``send``'s cost per record goes to its future (its
        creation, its result, the caller's gather), so a writer that needs no per-record metadata uses this.

        ``await producer.produce(...)``. The common case (a sendable producer, the topic's partition count
        known, the partition's open batch with room, the buffer not full) is done here, synchronously, and
        returns an awaitable that is already done; anything else (the first record of a batch, a full
        buffer, an error to raise) returns the coroutine of the whole path. So the result is an awaitable,
        not always a coroutine: await it (or gather / ensure_future it); ``create_task`` takes only coroutines.
        Not awaiting it still queues a synchronous-path record, where a coroutine would queue nothing."""
        info = self.cluster.topics.get(topic)
        txn = self.transaction_manager
        if (info is not None and info.partitions and not info.error and headers is None and self._fast_path
                and self.sender.fatal_error is None and (txn is None or txn.state is TxnState.IN_TRANSACTION)):
            count = len(info.partitions)
            sticky = partition is None and key is None
            if partition is None:
                chosen = partition_for_key(key, count) if key is not None else self.partitioner.partition(topic, count)
            elif 0 <= partition < count:
                chosen = partition
            else:  # _append raises
                return self._append(topic, value, key, partition, headers, timestamp_ms, None)
            timestamp = timestamp_ms if timestamp_ms is not None else time.time_ns() // 1_000_000
            added = self.accumulator.try_append_open(topic, chosen, timestamp, key, value)
            if added >= 0:
                if key is None:  # as _append: the partitioner counts what went to its sticky partition
                    self.partitioner.record_appended(topic, chosen, added, count)
                return self._send_sealed() if self.accumulator.sealed else self._done
            partition = None if sticky else chosen  # the sticky choice is the partitioner's to make
            timestamp_ms = timestamp
        return self._append(topic, value, key, partition, headers, timestamp_ms, None)

    async def _append(self, topic: str, value: bytes | None, key: bytes | None, partition: int | None,
                      headers: list[tuple[str, bytes | None]] | None, timestamp_ms: int | None,
                      future: asyncio.Future[RecordMetadata] | None) -> None:
        self._check_can_send()
        count = self._known_partition_count(topic) or await self._partition_count(topic)  # per record: no coroutine
        if partition is None:
            partition = partition_for_key(key, count) if key is not None else self.partitioner.partition(topic, count)
        elif not 0 <= partition < count:
            raise KafkaException(f"partition {partition} of {topic} does not exist ({count} partitions)")
        bound = record_size_bound(key, value, headers)  # produce()'s synchronous path relies on _fits_any_request
        accumulator = self.accumulator
        if bound + HEADER_SIZE > self.max_request_size or bound + HEADER_SIZE > accumulator.buffer_memory:
            raise MessageTooLargeError(f"a record of about {bound + HEADER_SIZE} bytes exceeds max_request_size "
                                       "or buffer_memory")
        if accumulator.bytes_held >= accumulator.buffer_memory:
            await accumulator.wait_for_room()
        timestamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        added = accumulator.append(topic, partition, timestamp, key, value, headers, future, self._loop)
        if key is None:
            self.partitioner.record_appended(topic, partition, added, count)
        if accumulator.sealed:
            await self._send_sealed()

    async def send_arrow(self, topic: str, keys: ArrowColumn, values: ArrowColumn, length: int, *,
                         timestamp_ms: int | None = None) -> asyncio.Future[int]:
        """Queue ``length`` rows of Arrow key and value columns (``weir.protocol.record_builder.arrow_column``
        specs; no headers), partitioned as ``send`` partitions keyed records and encoded in C. The returned
        future resolves to the row count once every batch holding them is acknowledged, or fails with the
        first batch's error.

        The mirror of ``Consumer.getmany_arrow``, which reads records back as Arrow columns.

        Simplification: rows without a key go round-robin per row (the C grouping does it in one pass)
        where ``send`` sticks to a partition per batch (KIP-480); both spread them evenly."""
        self._check_can_send()
        count = await self._partition_count(topic)
        groups, self._arrow_turns[topic] = partition_rows(keys, length, count, self._arrow_turns.get(topic, -1))
        timestamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        accumulator = self.accumulator
        batches: list[ProducerBatch] = []
        for partition, rows in enumerate(groups):
            position, end = 0, len(rows) // 4
            while position < end:
                if accumulator.bytes_held >= accumulator.buffer_memory:
                    await accumulator.wait_for_room()
                position, batch = accumulator.append_arrow(topic, partition, timestamp, keys, values, length,
                                                           rows, position, self._loop)
                if not batches or batches[-1] is not batch:
                    batches.append(batch)
                if accumulator.sealed:
                    await self._send_sealed()
        return self._all_settled(batches, length)

    def _all_settled(self, batches: list[ProducerBatch], rows: int) -> asyncio.Future[int]:
        done: asyncio.Future[int] = self._loop.create_future()
        waiting = len(batches)

        def settled(_future: asyncio.Future[None]) -> None:
            nonlocal waiting
            waiting -= 1
            if waiting or done.done():
                return
            error = next((batch.error for batch in batches if batch.error is not None), None)
            if error is not None:
                done.set_exception(error)
                done.exception()  # seen: see ProducerBatch.fail
            else:
                done.set_result(rows)
        if not batches:
            done.set_result(0)
        for batch in batches:
            batch.settled.add_done_callback(settled)
        return done

    async def send_and_wait(self, topic: str, value: bytes | None = None, key: bytes | None = None, *,
                            partition: int | None = None, headers: list[tuple[str, bytes | None]] | None = None,
                            timestamp_ms: int | None = None) -> RecordMetadata:
        """``send()`` and wait for the acknowledgement: where the record landed."""
        return await (await self.send(topic, value, key, partition=partition, headers=headers,
                                      timestamp_ms=timestamp_ms))

    async def flush(self) -> None:
        """Send every queued record now (no linger) and wait until each one is settled; raises the first
        error of a batch holding records of ``produce()`` (those of ``send()`` are in their futures)."""
        accumulator = self.accumulator
        batches = [*accumulator.all_batches(), *self.sender.in_flight]
        if batches:
            accumulator.flushes += 1
            self.sender.send_now()
            self.sender.wake()
            try:
                await asyncio.wait([batch.settled for batch in batches])
            finally:
                accumulator.flushes -= 1
        error, accumulator.produce_error = accumulator.produce_error, None
        if error is not None:
            raise error

    # ------------------------------------------------------------------ transactions

    def _txn(self) -> TransactionManager:
        if self.transaction_manager is None:
            raise IllegalStateError("transactions need a transactional_id")
        return self.transaction_manager

    async def init_transactions(self) -> None:
        """Take the transactional id (``start()`` does this; calling it again does nothing)."""
        txn = self._txn()
        if txn.state is TxnState.UNINITIALIZED:
            await txn.initialize()
        elif txn.state is TxnState.INITIALIZING:  # an earlier attempt timed out: try again
            await txn._init_producer_id(bump=txn.epoch_bump_required)

    def begin_transaction(self) -> None:
        """Open a transaction: records sent from now on commit or abort together."""
        self._txn().begin()

    async def commit_transaction(self) -> None:
        """Deliver every record of the transaction, then commit it (records and offsets become visible).

        Raises the error that made the transaction abortable (then call ``abort_transaction``) or a
        fatal one. After a timeout (KafkaTimeoutError) the commit may be called again."""
        txn = self._txn()
        if txn.state is not TxnState.COMMITTING_TRANSACTION:
            txn.begin_commit()
        await self.flush()
        txn.maybe_fail_with_error()  # a batch failed: the transaction can only be aborted
        await txn.end(commit=True)

    async def prepare_transaction(self) -> PreparedTxnState:
        """Deliver every record of the transaction and leave it open for another process to end
        (``complete_prepared_transaction`` with the returned state), as KIP-939's prepareTransaction.
        The producer sends nothing more; ``commit_transaction`` / ``abort_transaction`` still end the
        transaction here, and ``close()`` leaves it open."""
        txn = self._txn()
        txn.require_transaction("prepare a transaction")
        await self.flush()
        return txn.prepare()  # raises the error that made the transaction abortable, if a batch failed

    async def abort_transaction(self) -> None:
        """Abort: unsent records fail with TransactionAbortedError, sent ones are discarded by the brokers."""
        txn = self._txn()
        if txn.state is not TxnState.ABORTING_TRANSACTION:
            txn.begin_abort()
        self.sender.wake()
        await self.flush()
        await txn.end(commit=False)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Producer]:
        """``async with producer.transaction():`` begins; commits on a normal exit, aborts on an exception."""
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            if self._txn().state is not TxnState.FATAL_ERROR:
                await self.abort_transaction()
            raise
        await self.commit_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
                                          group_metadata: GroupMetadata | str) -> None:
        """Commit a consumer group's offsets in this transaction (visible only if it commits).

        ``group_metadata`` is ``consumer.group_metadata()``: its generation, member and instance id
        let the group coordinator refuse a zombie whose partitions moved on (KIP-447,
        TxnOffsetCommit v3): CommitFailedError, abortable. A bare group id is accepted too (no check)."""
        if isinstance(group_metadata, str):
            from ..consumer.group import GroupMetadata
            group_metadata = GroupMetadata(group_metadata, -1, "", None)
        normalised = {TopicPartition(*tp): (o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o))
                      for tp, o in offsets.items()}
        await self._txn().send_offsets(normalised, group_metadata)
