"""confluent-kafka (librdkafka 2.16) against the real broker process."""

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.topics import create_topic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def produce(bootstrap, topic, messages, **config):
    """Produce (partition, key, value) tuples; return {(partition, offset): (key, value)} as acknowledged."""
    acked = {}
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked[(msg.partition(), msg.offset())] = (msg.key(), msg.value())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **config})
    for partition, key, value in messages:
        producer.produce(topic, value=value, key=key, partition=partition, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors
    return acked


def consume_all(bootstrap, topic, partitions, expected, **config):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", **config})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = {}
    try:
        for _ in range(600):
            if len(got) >= expected:
                break
            for msg in consumer.consume(1000, timeout=0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                got[(msg.partition(), msg.offset())] = (msg.key(), msg.value())
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
def test_idempotent_produce_and_consume_every_codec(shared_broker, topic_name, codec):
    create_topic(shared_broker.bootstrap, topic_name, 3)
    messages = [(i % 3, f"k{i}".encode(), f"value-{i}".encode() * 10) for i in range(3000)]
    acked = produce(shared_broker.bootstrap, topic_name, messages, **{"enable.idempotence": True,
                                                                      "compression.type": codec})
    assert len(acked) == 3000
    got = consume_all(shared_broker.bootstrap, topic_name, 3, 3000)
    assert got == acked
    for partition in range(3):  # offsets are dense and in produce order per partition
        offsets = sorted(o for p, o in got if p == partition)
        assert offsets == list(range(1000))
        values = [got[(partition, o)][1] for o in offsets]
        assert values == [m[2] for m in messages if m[0] == partition]


def test_large_batches(shared_broker, topic_name):
    create_topic(shared_broker.bootstrap, topic_name, 2)
    value = bytes(range(256)) * 400  # 100 KiB values, batches near message.max.bytes
    messages = [(i % 2, None, value + i.to_bytes(4, "big")) for i in range(200)]
    acked = produce(shared_broker.bootstrap, topic_name, messages, **{"enable.idempotence": True,
                                                                      "batch.size": 1000000})
    got = consume_all(shared_broker.bootstrap, topic_name, 2, 200, **{"fetch.max.bytes": 300000,
                                                                      "message.max.bytes": 250000,
                                                                     "max.partition.fetch.bytes": 200000})
    assert got == acked and len(got) == 200


def test_admin_lists_topics(shared_broker, topic_name):
    create_topic(shared_broker.bootstrap, topic_name, 2)
    metadata = AdminClient({"bootstrap.servers": shared_broker.bootstrap}).list_topics(timeout=10)
    assert len(metadata.topics[topic_name].partitions) == 2
    assert metadata.brokers[0].port == shared_broker.port


def test_oversize_message_is_refused_with_message_too_large(shared_broker, topic_name):
    create_topic(shared_broker.bootstrap, topic_name, 1)
    errors = []
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "message.max.bytes": 3_000_000,
                         "compression.type": "none"})
    producer.produce(topic_name, value=b"x" * 2_000_000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert [e.name() for e in errors] == ["MSG_SIZE_TOO_LARGE"]
