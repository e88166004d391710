"""Our client and the others on one topic, against Weir and the reference Kafka.

Records our producer writes (every codec, keys, null keys, headers with a null value, explicit
timestamps) are read back by confluent-kafka, aiokafka, kafka-python and Kafka's own console
consumer; records each of those writes are read by our consumer; keys land where the Java
client puts them; our consumer and a Java consumer share one group's partitions.
"""

import asyncio
import os
import random
import subprocess
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AIOTopicPartition
from confluent_kafka import Producer as CKProducer
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KPTopicPartition

from weir.client import Consumer, Producer, TopicPartition
from weir.client.partitioner import partition_for_key
from tests.client.test_producer import read_back as confluent_read
from tests.support.topics import KEEP_FOREVER, create_topic
from reference.kafka import java_command

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 40
PARTITIONS = 3
BASE_TS = 1_700_000_000_000
NULL = "<NULL>"


def _record(codec, i):
    key = None if i % 10 == 0 else f"key-{codec}-{i % 7}".encode()
    headers = [("codec", str(codec).encode()), ("i", str(i).encode()), ("none", None)]
    return key, f"value {codec} {i}".encode(), headers, BASE_TS + i


async def _write_ours(bootstrap, topic) -> dict:
    """Every codec's records from its own producer; {(partition, offset): (key, value, headers, ts)}."""
    written = {}
    for codec in CODECS:
        async with Producer(bootstrap, compression_type=codec, linger_ms=5) as producer:
            sent = []
            for i in range(PER_CODEC):
                key, value, headers, ts = _record(codec, i)
                sent.append(((key, value, headers, ts), await producer.send(topic, value, key, headers=headers,
                                                                            timestamp_ms=ts)))
            for record, delivery in sent:
                metadata = await delivery
                if record[0] is not None:
                    assert metadata.partition == partition_for_key(record[0], PARTITIONS)
                written[(metadata.partition, metadata.offset)] = record
    return written


async def _aiokafka_read(bootstrap, topic, expected) -> dict:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    got = {}
    try:
        consumer.assign([AIOTopicPartition(topic, p) for p in range(PARTITIONS)])
        async with asyncio.timeout(60):
            while len(got) < expected:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    for m in batch:
                        got[(m.partition, m.offset)] = (m.key, m.value, [(k, v) for k, v in m.headers], m.timestamp)
    finally:
        await consumer.stop()
    return got


def _kafka_python_read(bootstrap, topic, expected) -> dict:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    consumer.assign([KPTopicPartition(topic, p) for p in range(PARTITIONS)])
    got = {}
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                for m in batch:
                    got[(m.partition, m.offset)] = (m.key, m.value, [(k, v) for k, v in m.headers], m.timestamp)
    finally:
        consumer.close()
    return got


def _java_read(bootstrap, topic, expected, *extra) -> list[list[str]]:
    """Kafka's console consumer: one tab-separated line a record (timestamp, partition, offset,
    headers, key, value)."""
    result = subprocess.run(java_command(
        "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bootstrap, "--topic", topic,
        "--from-beginning", "--max-messages", str(expected), "--timeout-ms", "60000",
        "--formatter-property", "print.timestamp=true", "--formatter-property", "print.partition=true",
        "--formatter-property", "print.offset=true", "--formatter-property", "print.headers=true",
        "--formatter-property", "print.key=true",
        "--formatter-property", f"null.literal={NULL}", *extra), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return [line.split("\t") for line in result.stdout.splitlines() if line.strip()]


def _headers_text(headers) -> str:
    if not headers:
        return "NO_HEADERS"
    return ",".join(f"{k}:{NULL if v is None else v.decode()}" for k, v in headers)


async def test_our_records_read_by_confluent_aiokafka_kafka_python_and_java(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS, KEEP_FOREVER)
    written = await _write_ours(any_broker.bootstrap, topic_name)
    total = len(CODECS) * PER_CODEC
    assert len(written) == total
    expected = {place: (k, v, h, ts) for place, (k, v, h, ts) in written.items()}
    assert await asyncio.to_thread(confluent_read, any_broker.bootstrap, topic_name, PARTITIONS, total) == expected
    assert await _aiokafka_read(any_broker.bootstrap, topic_name, total) == expected
    assert await asyncio.to_thread(_kafka_python_read, any_broker.bootstrap, topic_name, total) == expected
    lines = await asyncio.to_thread(_java_read, any_broker.bootstrap, topic_name, total)
    java = {(int(p.removeprefix("Partition:")), int(o.removeprefix("Offset:"))): (ts, h, k, v)
            for ts, p, o, h, k, v in lines}
    assert java == {place: (f"CreateTime:{ts}", _headers_text(h), NULL if k is None else k.decode(), v.decode())
                    for place, (k, v, h, ts) in written.items()}


def _confluent_write(bootstrap, topic, records):
    producer = CKProducer({"bootstrap.servers": bootstrap, "compression.type": "zstd", "enable.idempotence": True,
                           "partitioner": "murmur2_random"})  # the Java client's partitioner
    for key, value, headers, ts in records:
        producer.produce(topic, value, key, headers=headers, timestamp=ts)
    assert producer.flush(30) == 0


async def _aiokafka_write(bootstrap, topic, records):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4", enable_idempotence=True)
    await producer.start()
    try:
        deliveries = [await producer.send(topic, value, key, headers=headers, timestamp_ms=ts)
                      for key, value, headers, ts in records]
        await asyncio.gather(*deliveries)
    finally:
        await producer.stop()


def _kafka_python_write(bootstrap, topic, records):
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", acks="all")
    for key, value, headers, ts in records:
        producer.send(topic, value, key, headers=headers, timestamp_ms=ts)
    producer.flush(30)
    producer.close()


def _java_write(bootstrap, topic, records):
    """Kafka's console producer (the Java client and its partitioner), snappy: one line a record."""
    lines = "".join(f"{_headers_text(h)}\t{k.decode()}\t{v.decode()}\n" for k, v, h, _ts in records)
    result = subprocess.run(java_command(
        "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", bootstrap, "--topic", topic,
        "--compression-codec", "snappy", "--reader-property", "parse.key=true",
        "--reader-property", "parse.headers=true",
        "--reader-property", f"null.marker={NULL}"), input=lines, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]


async def _read_ours(bootstrap, topic, expected) -> list:
    async with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        got = []
        async with asyncio.timeout(60):
            while len(got) < expected:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(batch)
    return got


@pytest.mark.parametrize("writer", ["confluent-kafka", "aiokafka", "kafka-python", "java"])
async def test_their_records_read_by_ours(any_broker, topic_name, writer):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS, KEEP_FOREVER)
    records = [(f"k{i % 11}".encode(), f"from {writer} {i}".encode(),
                [("writer", writer.encode()), ("i", str(i).encode())], BASE_TS + i) for i in range(200)]
    if writer == "confluent-kafka":
        await asyncio.to_thread(_confluent_write, any_broker.bootstrap, topic_name, records)
    elif writer == "aiokafka":
        await _aiokafka_write(any_broker.bootstrap, topic_name, records)
    elif writer == "kafka-python":
        await asyncio.to_thread(_kafka_python_write, any_broker.bootstrap, topic_name, records)
    else:
        await asyncio.to_thread(_java_write, any_broker.bootstrap, topic_name, records)
    got = await _read_ours(any_broker.bootstrap, topic_name, len(records))
    by_value = {r.value: r for r in got}
    assert len(got) == len(by_value) == len(records)
    for key, value, headers, ts in records:
        record = by_value[value]
        assert (record.key, list(record.headers)) == (key, headers)
        assert record.partition == partition_for_key(key, PARTITIONS)  # where the Java partitioner puts it
        if writer != "java":  # the console producer stamps its own CreateTime
            assert record.timestamp == ts
    for partition in range(PARTITIONS):
        offsets = sorted(r.offset for r in got if r.partition == partition)
        assert offsets == list(range(len(offsets)))


def test_random_keys_land_where_the_java_client_puts_them():
    rng = random.Random(int.from_bytes(os.urandom(4)))
    cases = [(rng.randint(1, 200), rng.randbytes(rng.randint(0, 40))) for _ in range(3000)]
    lines = "".join(f"{count} {key.hex()}\n" for count, key in cases)
    result = subprocess.run(java_command("dev.weir.reference.KeyPartitions"), input=lines, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    java = [int(line) for line in result.stdout.split()]
    assert java == [partition_for_key(key, count) for count, key in cases]


async def test_our_consumer_and_a_java_consumer_share_a_group(any_broker, topic_name):
    """Java's console consumer joins first and takes all four partitions; ours joins, the range
    assignor (the first both list) gives each two; then every record is read exactly once."""
    partitions, per_partition = 4, 50
    group = f"{topic_name}-g"
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, partitions, KEEP_FOREVER)
    java = subprocess.Popen(java_command(
        "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", any_broker.bootstrap,
        "--topic", topic_name, "--group", group, "--max-messages", str(2 * per_partition), "--timeout-ms", "90000",
        "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
        "--command-property", "auto.offset.reset=earliest"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        async with Consumer(topic_name, bootstrap_servers=any_broker.bootstrap, group_id=group,
                            auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500) as ours:
            ours_seen = []
            async with asyncio.timeout(90):
                while len(ours.assignment()) != 2:  # two each, once the Java member is in the group too
                    for batch in (await ours.getmany(timeout_ms=200)).values():
                        ours_seen.extend((r.partition, r.offset) for r in batch)
                assert not ours_seen  # nothing produced yet
                mine = {tp.partition for tp in ours.assignment()}
                async with Producer(any_broker.bootstrap) as producer:
                    for p in range(partitions):
                        for i in range(per_partition):
                            await producer.send(topic_name, f"{p}-{i}".encode(), partition=p)
                while len(ours_seen) < 2 * per_partition:
                    for batch in (await ours.getmany(timeout_ms=200)).values():
                        ours_seen.extend((r.partition, r.offset) for r in batch)
                assert {tp.partition for tp in ours.assignment()} == mine  # no rebalance meanwhile
                out, err = await asyncio.to_thread(java.communicate, timeout=90)
    finally:
        if java.poll() is None:
            java.kill()
            java.wait()
    assert java.returncode == 0, err[-3000:]
    lines = [line.split("\t") for line in out.splitlines() if line.strip()]
    assert all(len(fields) == 3 for fields in lines), out[:2000]
    java_seen = [(int(p.removeprefix("Partition:")), int(o.removeprefix("Offset:"))) for p, o, _value in lines]
    assert {p for p, _ in ours_seen} == mine
    assert {p for p, _ in java_seen} == set(range(partitions)) - mine
    assert sorted(ours_seen + java_seen) == [(p, o) for p in range(partitions) for o in range(per_partition)]
