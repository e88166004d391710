"""Produce a few records and read them back with each third-party client, given its security settings."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer

from weir.client import Admin, Consumer as WeirConsumer, Producer as WeirProducer, TopicPartition
from weir.client.admin import NewTopic

from tests.tools.tools import CONSUMER_PERF, PRODUCER_PERF, run_tool


def confluent(config: dict, topic: str, count: int) -> list[bytes]:
    producer = Producer(config)
    for i in range(count):
        producer.produce(topic, f"ck{i}".encode() * 50)
    assert producer.flush(15) == 0
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values = []
    try:
        for _ in range(200):
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
                if len(values) == count:
                    break
    finally:
        consumer.close()
    assert values == [f"ck{i}".encode() * 50 for i in range(count)]
    return values


def kafka_python(common: dict, topic: str, count: int) -> None:
    producer = KafkaProducer(**common)
    for i in range(count):
        producer.send(topic, f"kp{i}".encode())
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **common)
    values = [message.value for _, message in zip(range(count), consumer, strict=False)]
    consumer.close()
    assert values == [f"kp{i}".encode() for i in range(count)]


async def aiokafka(common: dict, topic: str, count: int) -> None:
    producer = AIOKafkaProducer(**common)
    await producer.start()
    try:
        for i in range(count):
            await producer.send_and_wait(topic, f"ak{i}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **common)
    await consumer.start()
    try:
        values = [(await consumer.getone()).value for _ in range(count)]
    finally:
        await consumer.stop()
    assert values == [f"ak{i}".encode() for i in range(count)]


def java_perf_tools(bootstrap: str, client_properties, topic: str, count: int) -> None:
    """kafka-producer-perf-test then kafka-consumer-perf-test (the Java client) with a client properties file."""
    produced = run_tool(PRODUCER_PERF, "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(count),
                        "--record-size", "100", "--throughput", "-1", "--command-config", str(client_properties))
    assert produced.returncode == 0, produced.stderr[-3000:]
    assert f"{count} records sent" in produced.stdout
    consumed = run_tool(CONSUMER_PERF, "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(count),
                        "--group", f"perf-{topic}", "--timeout", "30000", "--command-config", str(client_properties))
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    header, values = [line.split(", ") for line in consumed.stdout.strip().splitlines()[-2:]]
    assert dict(zip(header, values, strict=False))["data.consumed.in.nMsg"] == str(count)


async def ours(bootstrap: str, topic: str, count: int = 3, **security) -> list[bytes]:
    """Our client (weir.client), given its security keywords: create the topic, write, read back."""
    async with Admin(bootstrap, **security) as admin:
        await admin.create_topics([NewTopic(topic, 1)])
    async with WeirProducer(bootstrap, **security) as producer:
        for i in range(count):
            await producer.send(topic, value=b"ours%d" % i)
    async with WeirConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", **security) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        values = [(await consumer.getone()).value for _ in range(count)]
    assert values == [b"ours%d" % i for i in range(count)]
    return values
