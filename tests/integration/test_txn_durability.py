"""Exactly-once through kill -9: a stream of multi-partition transactions while the broker is
killed, and while producers die mid-transaction (their successor's init must abort what they left).

Every acknowledged commit must be fully visible to read_committed, no
transaction partly visible, nothing duplicated, nothing of an abandoned
transaction visible, and read_committed must reach the end of every partition
afterwards (no hanging transaction).
"""

import threading
import time
from collections import defaultdict

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.support.topics import create_topic

TOPICS = ("orders", "audit")
PARTITIONS = 2
TXN_ID = "durable-stream"
# (transaction number, where the broker dies): mid-transaction, or while the commit is in flight
KILLS = {6: "mid", 13: "commit", 21: "mid", 30: "commit"}
ABANDONED = {9, 25}  # the producer "crashes" after writing half of these: a new one takes over
TRANSACTIONS = 36


def new_producer(bootstrap):
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID, "linger.ms": 2,
                         "transaction.timeout.ms": 60000, "message.timeout.ms": 10000})
    producer.init_transactions(30)
    return producer


def records_of(txn):
    return [(topic, p, f"{txn}:{topic}:{p}".encode()) for topic in TOPICS for p in range(PARTITIONS)]


def restart(broker):
    broker.kill()
    broker.start()


def test_transactions_through_repeated_kill_9(broker):
    bootstrap = broker.bootstrap
    for topic in TOPICS:
        create_topic(bootstrap, topic, PARTITIONS)
    acknowledged = set()
    producer = new_producer(bootstrap)
    for txn in range(TRANSACTIONS):
        kill = KILLS.get(txn)
        try:
            producer.begin_transaction()
            for index, (topic, p, value) in enumerate(records_of(txn)):
                producer.produce(topic, value=value, partition=p)
                if index == 1 and (kill == "mid" or txn in ABANDONED):
                    producer.flush(10)
                    if kill:
                        restart(broker)
            if txn in ABANDONED:
                producer = new_producer(bootstrap)  # the old instance is simply never used again
                continue
            if kill == "commit":
                killer = threading.Timer(0.005, restart, args=(broker,))
                killer.start()
                try:
                    producer.commit_transaction(30)
                    acknowledged.add(txn)
                finally:
                    killer.join()
            else:
                producer.commit_transaction(30)
                acknowledged.add(txn)
        except KafkaException:
            # The broker died under this transaction: its outcome is unknown to us, but it must be
            # all-or-nothing. A new producer with the same id fences the old one and aborts what is open.
            producer = new_producer(bootstrap)
    assert len(acknowledged) >= TRANSACTIONS - len(KILLS) - len(ABANDONED)

    visible = read_committed_to_end(bootstrap)
    per_txn = defaultdict(list)
    for value in visible:
        per_txn[int(value.split(b":")[0])].append(value)
    assert not ABANDONED & set(per_txn), "an abandoned transaction became visible"
    for txn, values in per_txn.items():
        assert sorted(values) == sorted(v for _t, _p, v in records_of(txn)), f"transaction {txn} partly visible"
    assert acknowledged <= set(per_txn), f"acknowledged but lost: {sorted(acknowledged - set(per_txn))}"


def read_committed_to_end(bootstrap):
    """Every read_committed record; fails unless each partition's LSO reaches its high watermark."""
    plain = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "isolation.level": "read_uncommitted"})
    committed = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "isolation.level": "read_committed",
                          "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {}
        deadline = time.monotonic() + 30
        for topic in TOPICS:
            for p in range(PARTITIONS):
                tp = TopicPartition(topic, p)
                while True:  # the LSO catches up with the high watermark: nothing is left hanging
                    _low, hw = plain.get_watermark_offsets(tp, timeout=10)
                    _low, lso = committed.get_watermark_offsets(tp, timeout=10)
                    if lso == hw or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                assert lso == hw, f"{topic}-{p}: last stable offset {lso} stuck below {hw}"
                ends[(topic, p)] = hw
        committed.assign([TopicPartition(t, p, 0) for t, p in ends])
        values, positions = [], {}
        while any(positions.get(tp, 0) < end for tp, end in ends.items()) and time.monotonic() < deadline:
            for msg in committed.consume(500, timeout=0.3):
                if msg.error():
                    raise KafkaException(msg.error())
                values.append(msg.value())
            for tp in committed.position([TopicPartition(t, p) for t, p in ends]):
                positions[(tp.topic, tp.partition)] = tp.offset
        assert all(positions.get(tp, 0) >= end for tp, end in ends.items()), (positions, ends)
        assert len(values) == len(set(values)), "a record was delivered twice"
        return values
    finally:
        plain.close()
        committed.close()
