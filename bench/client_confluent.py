"""confluent-kafka's contenders of ``bench.client`` (librdkafka): its Python API (``confluent``) and its
asyncio API (``confluent-aio``), each timed as bench/client.py describes.

Their consumers ask ``consume`` for at most the records still to come: it waits its whole timeout
for the number asked, so asking 10,000 when one record is left (the warm-up's) added a second to
every read (3 MB of 100 B records read at 2.9 MB/s, ours-fast 181 MB/s; 2026-11-28).
"""

from __future__ import annotations

import asyncio
import time


# ---------------------------------------------------------------------- confluent-kafka's asyncio API

async def confluent_produce(bootstrap, topic, records, payload, per_txn=None):
    from confluent_kafka.aio import AIOProducer
    config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    if per_txn:
        config["transactional.id"] = f"bench-confluent-{topic}"
    producer = AIOProducer(config)
    try:
        if per_txn:
            await producer.init_transactions(30)
        if per_txn:
            await producer.begin_transaction()
        delivery = await producer.produce(topic, b"warm-up", partition=0)
        await producer.flush()
        await delivery
        if per_txn:
            await producer.commit_transaction(30)
        began = time.perf_counter()
        if per_txn:
            for start in range(0, records, per_txn):
                await producer.begin_transaction()
                for _ in range(min(per_txn, records - start)):
                    await producer.produce(topic, payload)
                await producer.commit_transaction(60)
        else:
            deliveries = [await producer.produce(topic, payload) for _ in range(records)]
            await producer.flush()
            await asyncio.gather(*deliveries)
        return time.perf_counter() - began
    finally:
        await producer.close()


async def confluent_consume(bootstrap, topic, partitions, records):
    from confluent_kafka import TopicPartition
    from confluent_kafka.aio import AIOConsumer
    consumer = AIOConsumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}", "enable.auto.commit": False,
                            "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    try:
        await consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        received = 0
        began = time.perf_counter()
        value_bytes = 0
        while received < records:
            for message in await consumer.consume(min(10000, records - received), timeout=1.0):
                if not message.error():
                    received += 1
                    value_bytes += len(message.value())
        return time.perf_counter() - began
    finally:
        await consumer.close()


# ---------------------------------------------------------------------- confluent-kafka's Python API

async def confluent_sync_produce(bootstrap, topic, records, payload, per_txn=None):
    """librdkafka through confluent-kafka's own API (its threads send; this one only queues)."""
    from confluent_kafka import Producer
    config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    if per_txn:
        config["transactional.id"] = f"bench-confluent-sync-{topic}"
    producer = Producer(config)

    def queue(count):
        for i in range(count):
            while True:
                try:
                    producer.produce(topic, payload)
                    break
                except BufferError:  # its queue is full: let deliveries drain it
                    producer.poll(0.01)
            if i % 1000 == 0:
                producer.poll(0)

    if per_txn:
        producer.init_transactions(30)
        producer.begin_transaction()
    producer.produce(topic, b"warm-up", partition=0)
    producer.flush(30)
    if per_txn:
        producer.commit_transaction(30)
    began = time.perf_counter()
    if per_txn:
        for start in range(0, records, per_txn):
            producer.begin_transaction()
            queue(min(per_txn, records - start))
            producer.commit_transaction(60)
    else:
        queue(records)
        if producer.flush(120):
            raise RuntimeError("confluent-kafka left records undelivered")
    return time.perf_counter() - began


async def confluent_sync_consume(bootstrap, topic, partitions, records):
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-sync-{topic}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "fetch.queue.backoff.ms": 10})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        received = value_bytes = 0
        began = time.perf_counter()
        while received < records:
            for message in consumer.consume(min(10000, records - received), timeout=1.0):
                if not message.error():
                    received += 1
                    value_bytes += len(message.value())
        return time.perf_counter() - began
    finally:
        consumer.close()
