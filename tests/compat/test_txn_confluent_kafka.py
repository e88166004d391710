"""Transactions with confluent-kafka (librdkafka 2.16) against the real broker process."""

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.broker_process import BrokerProcess
from tests.support.topics import create_topic


def txn_producer(bootstrap, txn_id, **config):
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **config})
    producer.init_transactions(20)
    return producer


def in_txn(producer, topic_partitions_values, commit=True):
    producer.begin_transaction()
    for topic, partition, value in topic_partitions_values:
        producer.produce(topic, value=value, partition=partition)
    if commit:
        producer.commit_transaction(20)
    else:
        producer.flush(20)
        producer.abort_transaction(20)


def consumer(bootstrap, isolation, **config):
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                     "isolation.level": isolation, "auto.offset.reset": "earliest", **config})


def read(bootstrap, assignments, isolation, *, until=None, quiet_s=1.5, deadline_s=20):
    """Values by (topic, partition) in offset order: until ``until`` values, or nothing new for ``quiet_s``."""
    reader = consumer(bootstrap, isolation)
    reader.assign([TopicPartition(t, p, 0) for t, p in assignments])
    got: dict[tuple[str, int], list[bytes]] = {}
    count = 0
    deadline = time.monotonic() + deadline_s
    last_new = time.monotonic()
    try:
        while time.monotonic() < deadline:
            if until is not None and count >= until:
                break
            if until is None and time.monotonic() - last_new > quiet_s:
                break
            for msg in reader.consume(500, timeout=0.2):
                if msg.error():
                    raise KafkaException(msg.error())
                got.setdefault((msg.topic(), msg.partition()), []).append(msg.value())
                count += 1
                last_new = time.monotonic()
    finally:
        reader.close()
    return got


def test_multi_topic_commit_is_atomic_and_aborted_records_never_reach_read_committed(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    topics = [topic_name + "-a", topic_name + "-b"]
    for topic in topics:
        create_topic(bootstrap, topic, 3)
    parts = [(t, p) for t in topics for p in range(3)]
    producer = txn_producer(bootstrap, topic_name)
    in_txn(producer, [(t, p, f"c1-{t[-1]}{p}".encode()) for t, p in parts])
    in_txn(producer, [(t, p, f"ab-{t[-1]}{p}".encode()) for t, p in parts], commit=False)
    in_txn(producer, [(t, p, f"c2-{t[-1]}{p}".encode()) for t, p in parts])
    committed = read(bootstrap, parts, "read_committed", until=12)
    assert committed == {(t, p): [f"c1-{t[-1]}{p}".encode(), f"c2-{t[-1]}{p}".encode()] for t, p in parts}
    uncommitted = read(bootstrap, parts, "read_uncommitted", until=18)
    # every record, aborted ones included, and never a control record handed to the application
    assert uncommitted == {(t, p): [f"{k}-{t[-1]}{p}".encode() for k in ("c1", "ab", "c2")] for t, p in parts}


def test_open_transaction_holds_read_committed_until_commit_releases_in_offset_order(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    txn = txn_producer(bootstrap, topic_name)
    txn.begin_transaction()
    for i in range(3):
        txn.produce(topic_name, value=b"txn-%d" % i, partition=0)
    txn.flush(20)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic_name, value=b"plain-after", partition=0)
    assert plain.flush(20) == 0
    reader = consumer(bootstrap, "read_committed")
    reader.assign([TopicPartition(topic_name, 0, 0)])
    try:
        held = [m for m in reader.consume(100, timeout=2.0) if not m.error()]
        assert held == []  # the plain record sits behind the open transaction's first offset
        txn.commit_transaction(20)
        values = []
        deadline = time.monotonic() + 20
        while len(values) < 4 and time.monotonic() < deadline:
            values += [m.value() for m in reader.consume(100, timeout=0.5) if not m.error()]
        assert values == [b"txn-0", b"txn-1", b"txn-2", b"plain-after"]
    finally:
        reader.close()


def test_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    zombie = txn_producer(bootstrap, topic_name)
    zombie.begin_transaction()
    zombie.produce(topic_name, value=b"zombie", partition=0)
    zombie.flush(20)
    successor = txn_producer(bootstrap, topic_name)
    with pytest.raises(KafkaException) as err:
        zombie.produce(topic_name, value=b"zombie-2", partition=1)
        zombie.commit_transaction(20)
    assert err.value.args[0].fatal() or "fenced" in str(err.value).lower()
    in_txn(successor, [(topic_name, 0, b"successor")])
    assert read(bootstrap, [(topic_name, 0), (topic_name, 1)], "read_committed") == {
        (topic_name, 0): [b"successor"]}


def test_stalled_transaction_is_aborted_after_its_timeout_and_the_lso_moves_on(tmp_path, topic_name):
    broker = BrokerProcess(tmp_path / "data", overrides={
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}).start()
    try:
        create_topic(broker.bootstrap, topic_name, 1)
        stalled = txn_producer(broker.bootstrap, topic_name, **{"transaction.timeout.ms": 1500})
        stalled.begin_transaction()
        stalled.produce(topic_name, value=b"stalled", partition=0)
        stalled.flush(20)
        plain = Producer({"bootstrap.servers": broker.bootstrap})
        plain.produce(topic_name, value=b"after", partition=0)
        assert plain.flush(20) == 0
        # nothing but the timeout releases the LSO: read_committed sees "after" only once it fires
        assert read(broker.bootstrap, [(topic_name, 0)], "read_committed", until=1) == {(topic_name, 0): [b"after"]}
        assert broker.wait_for_log("open longer than 1500 ms")
    finally:
        broker.stop()


def test_offsets_sent_to_a_transaction_count_only_once_it_commits(shared_broker, topic_name):
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    group = topic_name + "-group"
    source = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    tp = TopicPartition(topic_name, 0)
    producer = txn_producer(bootstrap, topic_name)
    try:
        for offset, commit in ((10, True), (20, False)):
            producer.begin_transaction()
            producer.produce(topic_name, value=b"out-%d" % offset, partition=0)
            producer.send_offsets_to_transaction([TopicPartition(topic_name, 0, offset)],
                                                 source.consumer_group_metadata(), 20)
            if commit:
                producer.commit_transaction(20)
            else:
                producer.abort_transaction(20)
            [committed] = source.committed([tp], timeout=20)
            assert committed.offset == 10
    finally:
        source.close()
