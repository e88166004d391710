"""Our Producer against the real broker process; records read back with confluent-kafka."""

import asyncio

import pytest
from confluent_kafka import Consumer, TopicPartition as CKTopicPartition

from weir.client.errors import IllegalStateError, KafkaException, MessageTooLargeError
from weir.client.partitioner import partition_for_key
from weir.client.producer import Producer
from tests.support.topics import KEEP_FOREVER, create_topic


def read_back(bootstrap, topic, partitions, expected):
    """Every record of the topic as {(partition, offset): (key, value, headers, timestamp)}."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([CKTopicPartition(topic, p, 0) for p in range(partitions)])
    got = {}
    try:
        for _ in range(200):
            if len(got) >= expected:
                break
            for msg in consumer.consume(1000, timeout=0.2):
                assert not msg.error(), msg.error()
                got[(msg.partition(), msg.offset())] = (msg.key(), msg.value(), msg.headers() or [],
                                                        msg.timestamp()[1])
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
async def test_records_land_where_the_java_client_puts_them_and_read_back(any_broker, topic_name, codec):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 3, KEEP_FOREVER)
    async with Producer(any_broker.bootstrap, compression_type=codec, linger_ms=2) as producer:
        deliveries = []
        for i in range(600):
            key = f"customer-{i % 37}".encode()
            deliveries.append(await producer.send(topic_name, f"order {i}".encode() * 5, key,
                                                  headers=[("n", str(i).encode()), ("empty", None)],
                                                  timestamp_ms=1_700_000_000_000 + i))
        acked = await asyncio.gather(*deliveries)
    for i, metadata in enumerate(acked):
        assert metadata.partition == partition_for_key(f"customer-{i % 37}".encode(), 3)
        assert metadata.timestamp == 1_700_000_000_000 + i
    per_partition = {}
    for metadata in acked:
        per_partition.setdefault(metadata.partition, []).append(metadata.offset)
    for offsets in per_partition.values():
        assert offsets == list(range(len(offsets)))  # in send order, no gap, no duplicate
    got = await asyncio.to_thread(read_back, any_broker.bootstrap, topic_name, 3, 600)
    assert len(got) == 600
    for i, metadata in enumerate(acked):
        key, value, headers, timestamp = got[(metadata.partition, metadata.offset)]
        assert (key, value, timestamp) == (f"customer-{i % 37}".encode(), f"order {i}".encode() * 5,
                                           1_700_000_000_000 + i)
        assert headers == [("n", str(i).encode()), ("empty", None)]


async def test_null_keys_stick_to_a_partition_per_batch(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 4)
    async with Producer(any_broker.bootstrap, batch_size=4096, linger_ms=50) as producer:
        # ~50 filled batches: the chance that a random pick per batch misses one of the four
        # partitions is 4 * (3/4)^50, about 1e-6 (with 400 records it was one run in six).
        deliveries = [await producer.send(topic_name, b"x" * 100) for _ in range(2000)]
        acked = await asyncio.gather(*deliveries)
    runs = 1 + sum(1 for a, b in zip(acked, acked[1:], strict=False) if a.partition != b.partition)
    assert {a.partition for a in acked} == {0, 1, 2, 3}
    assert runs <= 2000 * 107 // 4096 + 2  # a partition change per filled batch, not per record


async def test_flush_delivers_without_waiting_for_linger(any_broker, topic_name):
    async with Producer(any_broker.bootstrap, linger_ms=60_000) as producer:
        delivery = await producer.send(topic_name, b"now")
        await asyncio.wait_for(producer.flush(), 10)
        assert delivery.done() and delivery.result().offset == 0


async def test_acks_zero_and_refusals(any_broker, topic_name):
    async with Producer(any_broker.bootstrap, acks=0, enable_idempotence=False) as producer:
        metadata = await producer.send_and_wait(topic_name, b"fire and forget")
        assert metadata.offset == -1
        with pytest.raises(MessageTooLargeError):
            await producer.send(topic_name, b"x" * 2_000_000)
    with pytest.raises(IllegalStateError):
        await producer.send(topic_name, b"closed")
    with pytest.raises(ValueError):
        Producer(any_broker.bootstrap, acks=1)  # idempotence needs acks=all


async def test_produce_takes_its_synchronous_path_and_keeps_order_partitioning_and_checks(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 3)
    keyed = [(f"key-{i % 7}".encode(), f"keyed {i}".encode()) for i in range(600)]
    keyless = [(None, f"keyless {i}".encode() * 20) for i in range(600)]
    async with Producer(any_broker.bootstrap, batch_size=4096, linger_ms=20) as producer:
        await producer.produce(topic_name, b"opens", b"key-0")  # the first record opens the batch
        pending = producer.produce(topic_name, b"joins", b"key-0")
        assert not asyncio.iscoroutine(pending) and asyncio.isfuture(pending) and pending.done()
        await pending
        for (key, value), (_, other) in zip(keyed, keyless, strict=True):
            await producer.produce(topic_name, value, key)
            await producer.produce(topic_name, other)
        await producer.produce(topic_name, b"with a header", b"key-1", headers=[("h", b"1")])
        explicit = [(None, f"explicit {i}".encode()) for i in range(5)]
        for _, value in explicit:
            await producer.produce(topic_name, value, partition=2)
        with pytest.raises(KafkaException):
            await producer.produce(topic_name, b"nowhere", partition=3)
        with pytest.raises(MessageTooLargeError):
            await producer.produce(topic_name, b"x" * 2_000_000)
        await asyncio.wait_for(producer.flush(), 60)
    with pytest.raises(IllegalStateError):
        await producer.produce(topic_name, b"closed")
    total = 2 + len(keyed) + len(keyless) + 1 + len(explicit)
    got = await asyncio.to_thread(read_back, any_broker.bootstrap, topic_name, 3, total)
    assert len(got) == total
    by_partition: dict[int, list[tuple[bytes | None, bytes]]] = {}
    for (partition, _offset), (key, value, headers, _ts) in sorted(got.items()):
        by_partition.setdefault(partition, []).append((key, value))
        if key is not None:
            assert partition == partition_for_key(key, 3)
        if value.startswith(b"explicit"):
            assert partition == 2
        assert headers == ([("h", b"1")] if value == b"with a header" else [])
    # each partition holds its records in the order they were produced
    order = {record: i for i, record in enumerate([(b"key-0", b"opens"), (b"key-0", b"joins"),
                                                    *(r for pair in zip(keyed, keyless, strict=True) for r in pair),
                                                    (b"key-1", b"with a header"), *explicit])}
    for records in by_partition.values():
        assert [order[r] for r in records] == sorted(order[r] for r in records)
    # keyless records stick to a partition per batch (~4 KiB of ~200-byte records), not per record
    keyless_partitions = [p for (p, _o), (k, v, *_rest) in sorted(got.items(), key=lambda kv: order[kv[1][:2]])
                          if k is None and not v.startswith(b"explicit")]
    runs = 1 + sum(1 for a, b in zip(keyless_partitions, keyless_partitions[1:], strict=False) if a != b)
    assert runs <= 600 * 220 // 4096 + 2
