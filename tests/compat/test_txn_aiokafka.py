"""Transactions with aiokafka 0.14 (v0 of every transaction API) against the real broker process."""

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError, ProducerFenced

from tests.compat.test_aiokafka import create_topic


async def started_producer(bootstrap, txn_id):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    await producer.start()
    return producer


async def read(bootstrap, topics_partitions, isolation, expected, quiet_s=1.5):
    """Values per (topic, partition) in offset order, once ``expected`` arrived and nothing more comes."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation)
    await consumer.start()
    got: dict[tuple[str, int], list[bytes]] = {}
    try:
        tps = [TopicPartition(t, p) for t, p in topics_partitions]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        async with asyncio.timeout(30):
            count = 0
            while True:
                batch = await consumer.getmany(timeout_ms=quiet_s * 1000 if count >= expected else 500)
                if not batch and count >= expected:
                    break
                for tp, messages in batch.items():
                    got.setdefault((tp.topic, tp.partition), []).extend(m.value for m in messages)
                    count += len(messages)
    finally:
        await consumer.stop()
    return got


async def test_commit_and_abort_across_topics(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    topics = [topic_name + "-a", topic_name + "-b"]
    for topic in topics:
        await create_topic(bootstrap, topic, 2)
    parts = [(t, p) for t in topics for p in range(2)]
    producer = await started_producer(bootstrap, topic_name)
    try:
        async with producer.transaction():
            for t, p in parts:
                await producer.send(t, b"c1", partition=p)
        await producer.begin_transaction()
        for t, p in parts:
            await producer.send(t, b"ab", partition=p)
        await producer.abort_transaction()
        async with producer.transaction():
            for t, p in parts:
                await producer.send(t, b"c2", partition=p)
    finally:
        await producer.stop()
    assert await read(bootstrap, parts, "read_committed", 8) == {tp: [b"c1", b"c2"] for tp in parts}
    assert await read(bootstrap, parts, "read_uncommitted", 12) == {tp: [b"c1", b"ab", b"c2"] for tp in parts}


async def test_new_producer_fences_the_old_one(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await create_topic(bootstrap, topic_name, 1)
    zombie = await started_producer(bootstrap, topic_name)
    successor = None
    try:
        await zombie.begin_transaction()
        await (await zombie.send(topic_name, b"zombie", partition=0))
        successor = await started_producer(bootstrap, topic_name)
        with pytest.raises((ProducerFenced, KafkaError)):
            await zombie.commit_transaction()
        async with successor.transaction():
            await successor.send(topic_name, b"successor", partition=0)
    finally:
        await zombie.stop()
        if successor is not None:
            await successor.stop()
    assert await read(bootstrap, [(topic_name, 0)], "read_committed", 1) == {(topic_name, 0): [b"successor"]}


async def test_send_offsets_to_transaction(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    await create_topic(bootstrap, topic_name, 1)
    group = topic_name + "-group"
    tp = TopicPartition(topic_name, 0)
    producer = await started_producer(bootstrap, topic_name)
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await reader.start()
    try:
        async with producer.transaction():
            await producer.send(topic_name, b"out", partition=0)
            await producer.send_offsets_to_transaction({tp: 7}, group)
        assert await reader.committed(tp) == 7
        await producer.begin_transaction()
        await producer.send_offsets_to_transaction({tp: 9}, group)
        await producer.abort_transaction()
        assert await reader.committed(tp) == 7
    finally:
        await reader.stop()
        await producer.stop()
