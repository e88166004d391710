"""The asyncio Producer: ``send()`` fills per-partition batches that one sender drains.

    async with Producer("127.0.0.1:9092") as producer:
        delivery = await producer.send("orders", b"order 1", key=b"customer-7")
        metadata = await delivery          # RecordMetadata(topic, partition, offset, timestamp)

Idempotence is on by default, as in the Java client since 3.0: retries never
duplicate or reorder a partition's records. Settings carry the Java client's
names in snake_case and its defaults.
"""

from __future__ import annotations

import asyncio
import time

from protocol.api_keys import ApiKey
from protocol.compression import Compression
from protocol.messages import init_producer_id
from protocol.records import HEADER_SIZE

from ..cluster import Cluster
from ..errors import IllegalStateError, KafkaException, MessageTooLargeError, error_for, raise_for
from ..partitioner import StickyPartitioner, partition_for_key
from ..types import RecordMetadata, TopicPartition
from .accumulator import Accumulator, record_size_bound
from .sender import ProducerIdentity, Sender

_ACKS = {"all": -1, -1: -1, "-1": -1, 0: 0, "0": 0, 1: 1, "1": 1}
_CODECS = {None: Compression.NONE, "none": Compression.NONE, "gzip": Compression.GZIP,
           "snappy": Compression.SNAPPY, "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


class Producer:
    def __init__(self, bootstrap_servers: str | list[str] = "127.0.0.1:9092", *, client_id: str = "weir-python",
                 acks: str | int = "all", enable_idempotence: bool = True, linger_ms: int = 5,
                 batch_size: int = 16384, compression_type: str | None = None, max_in_flight: int = 5,
                 buffer_memory: int = 32 * 1024 * 1024, max_request_size: int = 1048576,
                 request_timeout_ms: int = 30000, delivery_timeout_ms: int = 120000, retry_backoff_ms: int = 100,
                 partitioner: StickyPartitioner | None = None):
        if acks not in _ACKS:
            raise ValueError(f"acks must be 'all', -1, 0 or 1, not {acks!r}")
        if compression_type not in _CODECS:
            raise ValueError(f"unknown compression_type {compression_type!r}")
        self.acks = _ACKS[acks]
        if enable_idempotence and self.acks != -1:
            raise ValueError("enable_idempotence requires acks='all' (as the Java client requires)")
        if enable_idempotence and not 1 <= max_in_flight <= 5:
            raise ValueError("enable_idempotence allows at most 5 requests in flight per connection")
        self.idempotent = enable_idempotence
        self.cluster = Cluster(bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
                               retry_backoff_ms=retry_backoff_ms)
        self.accumulator = Accumulator(batch_size=batch_size, linger_ms=linger_ms,
                                       compression=_CODECS[compression_type], buffer_memory=buffer_memory)
        self.partitioner = partitioner or StickyPartitioner(batch_size)
        self.max_request_size = max_request_size
        self.sender = Sender(self.cluster, self.accumulator, acks=self.acks, idempotent=self.idempotent,
                             request_timeout_ms=request_timeout_ms, max_in_flight=max_in_flight,
                             delivery_timeout_ms=delivery_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                             max_request_size=max_request_size, init_producer_id=self._init_producer_id)
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Reach the cluster, get a producer id (with idempotence) and start the sender."""
        if self._started:
            return
        await self.cluster.refresh([])
        if self.idempotent:
            await self._init_producer_id(self.sender.identity)
        self.sender.start()
        self._started = True

    async def close(self) -> None:
        """Deliver everything sent so far, then close the connections."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            await self.sender.close()
        await self.cluster.close()

    async def __aenter__(self) -> "Producer":
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def _init_producer_id(self, identity: ProducerIdentity) -> None:
        """Allocate a new producer id (epoch 0) for this idempotent producer."""
        # A retriable answer (COORDINATOR_LOAD_IN_PROGRESS from a Kafka that is still loading
        # __transaction_state, ...) is asked again after retry.backoff.ms, as the Java client does.
        deadline = time.monotonic() + self.sender.timeout_ms / 1000
        while True:
            connection = await self.cluster.any_connection()
            version = connection.version_for(ApiKey.INIT_PRODUCER_ID)
            response = await connection.request(ApiKey.INIT_PRODUCER_ID, version, init_producer_id.REQUEST(
                transactional_id=None, transaction_timeout_ms=-1))
            if not (response.error_code and error_for(response.error_code).retriable
                    and time.monotonic() < deadline):
                break
            await asyncio.sleep(self.cluster.retry_backoff)
        raise_for(response.error_code, "InitProducerId")
        identity.producer_id, identity.producer_epoch = response.producer_id, response.producer_epoch

    # ------------------------------------------------------------------ sending

    async def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, *,
                   partition: int | None = None, headers: list[tuple[str, bytes | None]] | None = None,
                   timestamp_ms: int | None = None) -> asyncio.Future:
        """Queue one record; the returned future resolves to its RecordMetadata once acknowledged."""
        if not self._started or self._closed:
            raise IllegalStateError("the producer is not started" if not self._started else "the producer is closed")
        if self.sender.fatal_error is not None:
            raise self.sender.fatal_error
        info = self.cluster.topics.get(topic)
        count = len(info.partitions) if info is not None and not info.error and info.partitions \
            else await self.cluster.partitions_for(topic)
        if partition is None:
            partition = partition_for_key(key, count) if key is not None else self.partitioner.partition(topic, count)
        elif not 0 <= partition < count:
            raise KafkaException(f"partition {partition} of {topic} does not exist ({count} partitions)")
        size = record_size_bound(key, value, headers) + HEADER_SIZE
        if size > self.max_request_size or size > self.accumulator.buffer_memory:
            raise MessageTooLargeError(f"a record of about {size} bytes exceeds max_request_size or buffer_memory")
        if self.accumulator.bytes_held >= self.accumulator.buffer_memory:
            await self.accumulator.wait_for_room()
        future = asyncio.get_running_loop().create_future()
        timestamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        added = self.accumulator.append(TopicPartition(topic, partition), timestamp, key, value, headers, future)
        if key is None:
            self.partitioner.record_appended(topic, partition, added, count)
        return future

    async def send_and_wait(self, topic: str, value: bytes | None = None, key: bytes | None = None,
                            **kwargs) -> RecordMetadata:
        return await (await self.send(topic, value, key, **kwargs))

    async def flush(self) -> None:
        """Send every queued record now (no linger) and wait until each one is settled."""
        batches = [*self.accumulator.all_batches(), *self.sender.in_flight]
        futures = [f for batch in batches for f in batch.futures]
        if not futures:
            return
        self.accumulator.flushes += 1
        self.sender.wake()
        try:
            await asyncio.wait(futures)
        finally:
            self.accumulator.flushes -= 1
