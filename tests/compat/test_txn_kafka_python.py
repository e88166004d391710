"""Transactions with kafka-python 3.0 (transaction APIs v3, KIP-360, KIP-447) against the real broker."""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from tests.compat.test_kafka_python import create_topic


def txn_producer(bootstrap, txn_id):
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    producer.init_transactions()
    return producer


def read(bootstrap, topics_partitions, isolation, expected, quiet_s=1.5):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation)
    tps = [TopicPartition(t, p) for t, p in topics_partitions]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got: dict[tuple[str, int], list[bytes]] = {}
    count = 0
    deadline = time.monotonic() + 30
    last_new = time.monotonic()
    try:
        while time.monotonic() < deadline:
            if count >= expected and time.monotonic() - last_new > quiet_s:
                break
            for tp, messages in consumer.poll(timeout_ms=300).items():
                got.setdefault((tp.topic, tp.partition), []).extend(m.value for m in messages)
                count += len(messages)
                last_new = time.monotonic()
    finally:
        consumer.close()
    return got


def test_commit_and_abort_across_topics(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    topics = [topic_name + "-a", topic_name + "-b"]
    for topic in topics:
        create_topic(bootstrap, topic, 2)
    parts = [(t, p) for t in topics for p in range(2)]
    producer = txn_producer(bootstrap, topic_name)
    try:
        for label, commit in ((b"c1", True), (b"ab", False), (b"c2", True)):
            producer.begin_transaction()
            for t, p in parts:
                producer.send(t, label, partition=p)
            if commit:
                producer.commit_transaction()
            else:
                producer.flush()
                producer.abort_transaction()
    finally:
        producer.close()
    assert read(bootstrap, parts, "read_committed", 8) == {tp: [b"c1", b"c2"] for tp in parts}
    assert read(bootstrap, parts, "read_uncommitted", 12) == {tp: [b"c1", b"ab", b"c2"] for tp in parts}


def test_new_producer_fences_the_old_one(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    zombie = txn_producer(bootstrap, topic_name)
    zombie.begin_transaction()
    zombie.send(topic_name, b"zombie", partition=0).get(20)
    successor = txn_producer(bootstrap, topic_name)
    try:
        with pytest.raises(KafkaError):
            zombie.commit_transaction()
        successor.begin_transaction()
        successor.send(topic_name, b"successor", partition=0)
        successor.commit_transaction()
    finally:
        zombie.close(timeout=1)
        successor.close()
    assert read(bootstrap, [(topic_name, 0)], "read_committed", 1) == {(topic_name, 0): [b"successor"]}


def test_send_offsets_to_transaction(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    group = topic_name + "-group"
    tp = TopicPartition(topic_name, 0)
    producer = txn_producer(bootstrap, topic_name)
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                           isolation_level="read_committed")
    try:
        for offset, commit in ((5, True), (8, False)):
            producer.begin_transaction()
            producer.send(topic_name, b"out", partition=0)
            producer.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)}, group)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            assert reader.committed(tp) == 5
    finally:
        reader.close()
        producer.close()
