"""The exactly-once pipeline figure of ``bench.client``: consume-transform-produce, each
client on its own.

A read_committed consumer in a group reads the input topic; every record's value goes
(reversed: a transform that touches each byte) to the output topic from a transactional
producer, and the consumed offsets are committed in the same transaction, one
transaction per ``per_txn`` input records. records/s from the first record in the
application's hands until the last transaction has committed.

- ours: ``client.transact.GroupTransactSession`` (getmany, send, end);
- aiokafka: AIOKafkaConsumer + AIOKafkaProducer with ``send_offsets_to_transaction``;
- confluent-kafka's asyncio API: AIOConsumer + AIOProducer with
  ``send_offsets_to_transaction(positions, consumer_group_metadata())``.

Producers keep each client's defaults except linger 5 ms (acks=all and idempotence come
with transactions), as in the produce figures.
"""

from __future__ import annotations

import time


async def ours_pipeline(bootstrap, source, sink, records, per_txn):
    from weir.client.transact import GroupTransactSession
    async with GroupTransactSession(source, bootstrap_servers=bootstrap, group_id=f"bench-{sink}",
                                    transactional_id=f"bench-ours-{sink}",
                                    producer_options={"linger_ms": 5}) as session:
        done = in_txn = 0
        began = None
        while done < records:
            for batch in (await session.getmany(timeout_ms=1000, max_records=per_txn - in_txn)).values():
                began = began or time.perf_counter()
                for record in batch:
                    await session.send(sink, record.value[::-1], record.key)
                in_txn += len(batch)
            if in_txn and (in_txn >= per_txn or done + in_txn >= records):
                if not await session.end():
                    raise RuntimeError("our pipeline's transaction aborted")
                done, in_txn = done + in_txn, 0
        return time.perf_counter() - began


async def aiokafka_pipeline(bootstrap, source, sink, records, per_txn):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    group = f"bench-{sink}"
    consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group,
                                isolation_level="read_committed", auto_offset_reset="earliest",
                                enable_auto_commit=False)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"bench-aiokafka-{sink}",
                                enable_idempotence=True, acks="all", linger_ms=5)
    await consumer.start()
    await producer.start()
    try:
        done = in_txn = 0
        began, offsets = None, {}
        while done < records:
            for tp, batch in (await consumer.getmany(timeout_ms=1000, max_records=per_txn - in_txn)).items():
                if began is None:
                    began = time.perf_counter()
                if not in_txn:
                    await producer.begin_transaction()
                for record in batch:
                    await producer.send(sink, record.value[::-1], record.key)
                in_txn += len(batch)
                offsets[tp] = batch[-1].offset + 1
            if in_txn and (in_txn >= per_txn or done + in_txn >= records):
                await producer.send_offsets_to_transaction(offsets, group)
                await producer.commit_transaction()
                done, in_txn, offsets = done + in_txn, 0, {}
        return time.perf_counter() - began
    finally:
        await producer.stop()
        await consumer.stop()


async def confluent_pipeline(bootstrap, source, sink, records, per_txn):
    from confluent_kafka import TopicPartition
    from confluent_kafka.aio import AIOConsumer, AIOProducer
    consumer = AIOConsumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{sink}",
                            "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                            "enable.auto.commit": False})
    producer = AIOProducer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-confluent-{sink}",
                            "linger.ms": 5})
    try:
        await consumer.subscribe([source])
        await producer.init_transactions(30)
        done = in_txn = 0
        began, offsets = None, {}
        while done < records:
            messages = [m for m in await consumer.consume(per_txn - in_txn, timeout=1.0) if not m.error()]
            if messages:
                if began is None:
                    began = time.perf_counter()
                if not in_txn:
                    await producer.begin_transaction()
                for message in messages:
                    await producer.produce(sink, message.value()[::-1], message.key())
                    offsets[message.partition()] = message.offset() + 1
                in_txn += len(messages)
            if in_txn and (in_txn >= per_txn or done + in_txn >= records):
                positions = [TopicPartition(source, p, o) for p, o in offsets.items()]
                await producer.send_offsets_to_transaction(positions, await consumer.consumer_group_metadata(), 30)
                await producer.commit_transaction(60)
                done, in_txn, offsets = done + in_txn, 0, {}
        return time.perf_counter() - began
    finally:
        await producer.close()
        await consumer.close()


PIPELINES = {"ours": ours_pipeline, "aiokafka": aiokafka_pipeline, "confluent-aio": confluent_pipeline}
