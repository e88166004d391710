"""kafka-python 3.0 (idempotent by default) against the real broker process."""

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def create_topic(bootstrap, name, partitions):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        admin.close()


def consume(bootstrap, topic, partitions, expected):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10_000)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = {}
    try:
        for message in consumer:
            got[(message.partition, message.offset)] = (message.key, message.value)
            if len(got) >= expected:
                break
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_produce_and_consume(shared_broker, topic_name, codec):
    create_topic(shared_broker.bootstrap, topic_name, 3)
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, compression_type=codec, acks="all")
    assert producer.config["enable_idempotence"], "kafka-python is idempotent by default"
    futures = [(i, producer.send(topic_name, value=f"v{i}".encode() * 20, key=f"k{i}".encode(), partition=i % 3))
               for i in range(2000)]
    producer.flush(30)
    acked = {}
    for i, future in futures:
        meta = future.get(10)
        acked[(meta.partition, meta.offset)] = (f"k{i}".encode(), f"v{i}".encode() * 20)
    producer.close()
    assert len(acked) == 2000
    assert consume(shared_broker.bootstrap, topic_name, 3, 2000) == acked


def test_list_offsets_and_describe_configs(shared_broker, topic_name):
    create_topic(shared_broker.bootstrap, topic_name, 1)
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap)
    for i in range(10):
        producer.send(topic_name, value=b"x", timestamp_ms=1_000_000 + i * 1000)
    producer.flush(10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap)
    tp = TopicPartition(topic_name, 0)
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 10}
    found = consumer.offsets_for_times({tp: 1_004_500})[tp]
    assert (found.offset, found.timestamp) == (5, 1_005_000)
    assert consumer.offsets_for_times({tp: 9_000_000})[tp] is None
    consumer.close()
