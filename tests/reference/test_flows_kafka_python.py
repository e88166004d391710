"""Transaction flows with kafka-python 3.0, on Weir and on Apache Kafka.

The same assertions run against both brokers; they were written from Kafka's behaviour.
kafka-python sends InitProducerId v4 (KIP-360), the transaction APIs up to v3, TxnOffsetCommit
v3 with the group metadata of ``KafkaConsumer.group_metadata()`` (KIP-447) and, under
read_committed, OffsetFetch with require_stable.
"""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidProducerEpochError, KafkaError, ProducerFencedError
from kafka.structs import OffsetAndMetadata

from tests.compat.test_kafka_python import create_topic
from tests.reference import flows
from tests.support.waiting import wait_until


def txn_producer(bootstrap, txn_id, **config):
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, **config)
    producer.init_transactions()
    return producer


def in_txn(producer, sends, commit=True):
    producer.begin_transaction()
    for topic, partition, value in sends:
        producer.send(topic, value, partition=partition).get(flows.DEADLINE_S)
    if commit:
        producer.commit_transaction()
    else:
        producer.abort_transaction()


def plain_produce(bootstrap, topic, value):
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        producer.send(topic, value, partition=0).get(flows.DEADLINE_S)
    finally:
        producer.close()


class Reader:
    """An assigned consumer reading (offset, value) pairs up to the end offset of its isolation level
    (the LSO under read_committed): kafka-python moves its position past control batches."""

    def __init__(self, bootstrap, topic, partitions, isolation, start=0, **config):
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                      isolation_level=isolation, fetch_max_wait_ms=100, **config)
        self.tps = [TopicPartition(topic, p) for p in partitions]
        self.consumer.assign(self.tps)
        for tp in self.tps:
            self.consumer.seek(tp, start)
        self.got = {p: [] for p in partitions}

    def poll(self, timeout_ms=200):
        batches = self.consumer.poll(timeout_ms=timeout_ms)
        for tp, messages in batches.items():
            self.got[tp.partition] += [(m.offset, m.value) for m in messages]
        return batches

    def to_end(self):
        ends = self.consumer.end_offsets(self.tps)
        for tp in self.tps:
            wait_until(lambda tp=tp: self.consumer.position(tp) >= ends[tp] or self.poll() and False,
                       f"the position of {tp} to reach {ends[tp]}")
        return self.got

    def close(self):
        self.consumer.close()


def read_to_end(bootstrap, topic, partitions, isolation, start=0, **config):
    reader = Reader(bootstrap, topic, partitions, isolation, start, **config)
    try:
        return reader.to_end()
    finally:
        reader.close()


def end_offsets(bootstrap, topic):
    """(read_uncommitted, read_committed) end offsets of partition 0."""
    tp = TopicPartition(topic, 0)
    ends = []
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
        try:
            ends.append(consumer.end_offsets([tp])[tp])
        finally:
            consumer.close()
    return tuple(ends)


def test_committed_records_reach_read_committed_and_aborted_ones_never(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    producer = txn_producer(bootstrap, topic_name)
    try:
        for label, commit in ((b"c1", True), (b"ab", False), (b"c2", True)):
            in_txn(producer, [(topic_name, p, label) for p in (0, 1)], commit=commit)
    finally:
        producer.close()
    assert read_to_end(bootstrap, topic_name, [0, 1], "read_committed") == {
        p: flows.VISIBILITY_COMMITTED for p in (0, 1)}
    assert read_to_end(bootstrap, topic_name, [0, 1], "read_uncommitted") == {
        p: flows.VISIBILITY_ALL for p in (0, 1)}
    assert end_offsets(bootstrap, topic_name) == (flows.VISIBILITY_END, flows.VISIBILITY_END)


def test_interleaved_transactions_read_committed_from_any_offset(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    aborted, committed = txn_producer(bootstrap, topic_name + "-a"), txn_producer(bootstrap, topic_name + "-b")
    try:
        for producer in (aborted, committed):
            producer.begin_transaction()
        for index in range(2):
            for producer, name in ((aborted, b"a"), (committed, b"b")):
                producer.send(topic_name, name + b"%d" % index, partition=0).get(flows.DEADLINE_S)
        plain_produce(bootstrap, topic_name, b"plain")
        aborted.abort_transaction()
        committed.commit_transaction()
    finally:
        aborted.close()
        committed.close()
    assert read_to_end(bootstrap, topic_name, [0], "read_uncommitted") == {0: flows.INTERLEAVED_ALL}
    for start in flows.INTERLEAVED_STARTS:
        for config in ({}, {"max_partition_fetch_bytes": 1}):  # one batch per fetch
            assert read_to_end(bootstrap, topic_name, [0], "read_committed", start, **config) == {
                0: flows.interleaved_committed(start)}, (start, config)
    assert end_offsets(bootstrap, topic_name) == (flows.INTERLEAVED_END, flows.INTERLEAVED_END)


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_open_transaction_holds_read_committed_at_the_lso_until_it_ends(any_broker, topic_name, outcome):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    plain_produce(bootstrap, topic_name, b"before")
    held = txn_producer(bootstrap, topic_name + "-held")
    other = txn_producer(bootstrap, topic_name + "-other")
    reader = None
    try:
        held.begin_transaction()
        for value in (b"h0", b"h1"):
            held.send(topic_name, value, partition=0).get(flows.DEADLINE_S)
        plain_produce(bootstrap, topic_name, b"plain")
        in_txn(other, [(topic_name, 0, b"other")])

        # The other transaction's COMMIT marker lands just after its EndTxn is answered (Kafka writes
        # markers once it has answered): wait for it, then check where the LSO stayed.
        wait_until(lambda: end_offsets(bootstrap, topic_name)[0] == flows.HELD_END_OPEN, "the other's marker")
        assert end_offsets(bootstrap, topic_name) == (flows.HELD_END_OPEN, flows.HELD_LSO)
        reader = Reader(bootstrap, topic_name, [0], "read_committed")
        assert reader.to_end() == {0: flows.HELD_BEFORE}
        held_for = time.monotonic() + flows.HELD_WINDOW_S
        while time.monotonic() < held_for:
            assert reader.poll(timeout_ms=100) == {}  # "plain" and "other" wait behind the LSO
        assert reader.consumer.position(reader.tps[0]) == flows.HELD_LSO
        assert read_to_end(bootstrap, topic_name, [0], "read_uncommitted") == {0: [
            (0, b"before"), (1, b"h0"), (2, b"h1"), (3, b"plain"), (4, b"other")]}

        if outcome == "commit":
            held.commit_transaction()
        else:
            held.abort_transaction()
        expected = flows.HELD_BEFORE + flows.HELD_AFTER[outcome]
        wait_until(lambda: reader.poll() and reader.got[0] == expected, "the released records")
        assert end_offsets(bootstrap, topic_name) == (flows.HELD_END, flows.HELD_END)
    finally:
        held.close()
        other.close()
        if reader is not None:
            reader.close()


def test_a_stalled_transaction_is_aborted_by_the_broker_after_its_timeout(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    stalled = txn_producer(bootstrap, topic_name, transaction_timeout_ms=flows.STALL_TIMEOUT_MS)
    try:
        stalled.begin_transaction()
        stalled.send(topic_name, b"stalled", partition=0).get(flows.DEADLINE_S)
        plain_produce(bootstrap, topic_name, b"after")
        reader = Reader(bootstrap, topic_name, [0], "read_committed")
        try:
            wait_until(lambda: reader.poll(), "the timed-out transaction's abort")  # only it releases "after"
            assert reader.got == {0: [(1, b"after")]}  # "stalled" @0, "after" @1, the ABORT @2
        finally:
            reader.close()
        assert read_to_end(bootstrap, topic_name, [0], "read_uncommitted") == {
            0: [(0, b"stalled"), (1, b"after")]}

        # the broker bumped the epoch when it aborted: the Produce gets INVALID_PRODUCER_EPOCH, which
        # kafka-python (KIP-360) answers with InitProducerId naming its old epoch, and Kafka lets it
        # recover at the epoch the abort left (the transaction it had is gone)
        with pytest.raises(InvalidProducerEpochError):
            stalled.send(topic_name, b"late", partition=0).get(flows.DEADLINE_S)
        manager = stalled._transaction_manager  # no public signal for the end of the epoch bump
        wait_until(lambda: not manager.is_bumping_epoch(), "the producer's epoch bump")
        in_txn(stalled, [(topic_name, 0, b"recovered")])
        assert read_to_end(bootstrap, topic_name, [0], "read_committed") == {0: [(1, b"after"), (3, b"recovered")]}
    finally:
        stalled.close(timeout=1)


def test_a_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    zombie = txn_producer(bootstrap, topic_name)
    successor = None
    try:
        zombie.begin_transaction()
        zombie.send(topic_name, b"zombie", partition=0).get(flows.DEADLINE_S)
        successor = txn_producer(bootstrap, topic_name)  # zombie @0, the ABORT of its transaction @1
        # A new partition needs AddPartitionsToTxn v3: PRODUCER_FENCED, fatal.
        zombie.send(topic_name, b"zombie-2", partition=1)
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()

        second = txn_producer(bootstrap, topic_name + "-2")
        second.begin_transaction()
        second.send(topic_name, b"zombie", partition=1).get(flows.DEADLINE_S)
        txn_producer(bootstrap, topic_name + "-2").close()
        # A partition already in its transaction: the Produce gets INVALID_PRODUCER_EPOCH and the
        # KIP-360 epoch bump it tries is refused (PRODUCER_FENCED, fatal), unlike after a timeout.
        with pytest.raises(InvalidProducerEpochError):
            second.send(topic_name, b"zombie-2", partition=1).get(flows.DEADLINE_S)
        manager = second._transaction_manager  # no public signal for the end of the epoch bump
        wait_until(lambda: not manager.is_bumping_epoch(), "the zombie's epoch bump")
        with pytest.raises(KafkaError, match="ProducerFencedError"):
            second.begin_transaction()
        second.close(timeout=1)

        in_txn(successor, [(topic_name, 0, b"successor")])
    finally:
        zombie.close(timeout=1)
        if successor is not None:
            successor.close()
    assert read_to_end(bootstrap, topic_name, [0, 1], "read_committed") == {0: [(2, b"successor")], 1: []}
    assert read_to_end(bootstrap, topic_name, [0, 1], "read_uncommitted") == {
        p: [(0, b"zombie"), (2, b"successor")] if p == 0 else [(0, b"zombie")] for p in (0, 1)}


def _committed(bootstrap, group, tp, isolation):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             isolation_level=isolation)
    try:
        return consumer.committed(tp, timeout_ms=1000)
    except KafkaError as raised:
        return type(raised).__name__
    finally:
        consumer.close()


def test_offsets_sent_to_a_transaction_with_group_metadata_count_once_it_commits(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    group = topic_name + "-group"
    tp = TopicPartition(topic_name, 0)
    member = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    producer = txn_producer(bootstrap, topic_name)
    try:
        member.subscribe([topic_name])
        wait_until(lambda: member.poll(timeout_ms=200) == {} and member.assignment(), "the group assignment")
        member.commit({tp: OffsetAndMetadata(5, "", -1)})
        for offset, outcome in ((10, "commit"), (20, "abort")):
            producer.begin_transaction()
            producer.send(topic_name, b"out", partition=0).get(flows.DEADLINE_S)
            producer.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)}, member.group_metadata())
            before = 5 if outcome == "commit" else 10
            # pending: require_stable (read_committed) gets UNSTABLE_OFFSET_COMMIT, which kafka-python
            # retries until its timeout; without it, the old offset
            assert (_committed(bootstrap, group, tp, "read_committed"),
                    _committed(bootstrap, group, tp, "read_uncommitted")) == ("KafkaTimeoutError", before)
            if outcome == "commit":
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            assert (_committed(bootstrap, group, tp, "read_committed"),
                    _committed(bootstrap, group, tp, "read_uncommitted")) == (10, 10)  # the abort left 10
    finally:
        member.close()
        producer.close()
