"""Topic-level compression.type and message.timestamp.type=LogAppendTime with third-party clients."""

import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonPartition

from weir.protocol import records as rec
from weir.protocol.compression import Compression
from tests.support.topics import create_topic


def produce(bootstrap, topic, count, **config):
    """Produce ``count`` records; their delivery reports as (offset, timestamp type, timestamp)."""
    reports = []

    def on_delivery(err, msg):
        assert err is None, err
        reports.append((msg.offset(), *msg.timestamp()))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **config})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"value-%d" % i * 20, timestamp=1000 + i,
                         on_delivery=on_delivery)
    assert producer.flush(30) == 0
    return sorted(reports)


def confluent_read(bootstrap, topic, count):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                assert msg.error() is None, msg.error()
                got.append((msg.offset(), msg.key(), msg.value(), *msg.timestamp()))
    finally:
        consumer.close()
    return got


def kafka_python_read(bootstrap, topic, count):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    partition = KafkaPythonPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    got = []
    try:
        for message in consumer:
            got.append((message.offset, message.key, message.value, message.timestamp_type, message.timestamp))
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


def stored_headers(broker, topic):
    data = (broker.data_dir / f"{topic}-0" / ("0" * 20 + ".log")).read_bytes()
    return [header for _pos, header in rec.iter_headers(data)]


def test_zstd_topic_stores_uncompressed_batches_as_zstd(shared_broker, topic_name):
    create_topic(shared_broker.bootstrap, topic_name, config={"compression.type": "zstd"})
    produce(shared_broker.bootstrap, topic_name, 500, **{"compression.type": "none", "enable.idempotence": True})
    headers = stored_headers(shared_broker, topic_name)
    assert headers and {h.compression for h in headers} == {Compression.ZSTD}
    assert all(h.producer_id >= 0 and h.base_sequence >= 0 for h in headers), "idempotence fields kept"
    expected = [(i, b"k%d" % i, b"value-%d" % i * 20) for i in range(500)]
    assert [r[:3] for r in confluent_read(shared_broker.bootstrap, topic_name, 500)] == expected
    assert [r[:3] for r in kafka_python_read(shared_broker.bootstrap, topic_name, 500)] == expected
    assert {r[4] for r in kafka_python_read(shared_broker.bootstrap, topic_name, 500)} == set(range(1000, 1500)), \
        "CreateTime timestamps survive recompression"


def test_uncompressed_topic_stores_gzip_batches_uncompressed(shared_broker, topic_name):
    create_topic(shared_broker.bootstrap, topic_name, config={"compression.type": "uncompressed"})
    produce(shared_broker.bootstrap, topic_name, 200, **{"compression.type": "gzip"})
    assert {h.compression for h in stored_headers(shared_broker, topic_name)} == {Compression.NONE}
    assert len(confluent_read(shared_broker.bootstrap, topic_name, 200)) == 200


def test_log_append_time_topic_returns_and_shows_the_append_time(shared_broker, topic_name):
    create_topic(shared_broker.bootstrap, topic_name, config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    reports = produce(shared_broker.bootstrap, topic_name, 300, **{"compression.type": "lz4"})
    after = int(time.time() * 1000)
    assert len(reports) == 300
    assert {kind for _offset, kind, _ts in reports} == {TIMESTAMP_LOG_APPEND_TIME}
    append_times = {offset: ts for offset, _kind, ts in reports}
    assert all(before <= ts <= after for ts in append_times.values()), "the broker's clock, not the producer's 1000+i"
    seen = confluent_read(shared_broker.bootstrap, topic_name, 300)
    assert [(offset, kind, ts) for offset, _k, _v, kind, ts in seen] == [
        (offset, TIMESTAMP_LOG_APPEND_TIME, append_times[offset]) for offset in range(300)]
    log_append_time = 1
    assert [(offset, kind, ts) for offset, _k, _v, kind, ts in kafka_python_read(
        shared_broker.bootstrap, topic_name, 300)] == [
        (offset, log_append_time, append_times[offset]) for offset in range(300)]
    for header in stored_headers(shared_broker, topic_name):
        assert header.attributes & rec.TIMESTAMP_TYPE_FLAG and before <= header.max_timestamp <= after
        assert header.compression == Compression.LZ4, "compression.type=producer keeps the producer's codec"
