"""Transaction flows with confluent-kafka (librdkafka 2.16), on Weir and on Apache Kafka.

The same assertions run against both brokers; they were written from Kafka's behaviour.
librdkafka sends InitProducerId v4, AddPartitionsToTxn/AddOffsetsToTxn v0, EndTxn v1,
TxnOffsetCommit v3 (KIP-447 group metadata) and OffsetFetch with require_stable under
read_committed, its default isolation level.
"""

import pytest
from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.support.topics import create_topic
from tests.compat.test_txn_confluent_kafka import in_txn, txn_producer
from tests.reference import flows
from tests.support.waiting import wait_until


def _consumer(bootstrap, isolation, **config):
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "flows-reader", "enable.auto.commit": False,
                     "isolation.level": isolation, "auto.offset.reset": "earliest",
                     "enable.partition.eof": True, "fetch.wait.max.ms": 100, **config})


class Reader:
    """An assigned consumer that reads (offset, value) pairs until PARTITION_EOF on each partition.

    librdkafka signals EOF when its fetch position reaches the end the broker reports: the
    LSO under read_committed, the high watermark otherwise. So "read to EOF" shows both what
    was delivered and that nothing more was available, with no quiet period.
    """

    def __init__(self, bootstrap, topic, partitions, isolation, start=0, **config):
        self.consumer = _consumer(bootstrap, isolation, **config)
        self.topic = topic
        self.consumer.assign([TopicPartition(topic, p, start) for p in partitions])
        self.got = {p: [] for p in partitions}

    def to_eof(self):
        at_eof = set()

        def step():
            for msg in self.consumer.consume(100, timeout=0.2):
                if msg.error() is None:
                    self.got[msg.partition()].append((msg.offset(), msg.value()))
                    at_eof.discard(msg.partition())
                elif msg.error().code() == KafkaError._PARTITION_EOF:
                    at_eof.add(msg.partition())
                else:
                    raise KafkaException(msg.error())
            return at_eof == set(self.got)
        wait_until(step, "PARTITION_EOF on every partition")
        return self.got

    def position(self, partition):
        [tp] = self.consumer.position([TopicPartition(self.topic, partition)])
        return tp.offset

    def close(self):
        self.consumer.close()


def read_to_eof(bootstrap, topic, partitions, isolation, start=0, **config):
    reader = Reader(bootstrap, topic, partitions, isolation, start, **config)
    try:
        return reader.to_eof()
    finally:
        reader.close()


def end_offsets(bootstrap, topic, partition):
    """(read_uncommitted, read_committed) latest offsets as the Admin client's ListOffsets sees them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, partition)
    ends = []
    for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
        [future] = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level).values()
        ends.append(future.result(flows.DEADLINE_S).offset)
    return tuple(ends)


def watermarks(bootstrap, topic, partition, isolation):
    """get_watermark_offsets as a consumer of that isolation level asks the broker."""
    consumer = _consumer(bootstrap, isolation)
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=flows.DEADLINE_S)
    finally:
        consumer.close()


def plain_produce(bootstrap, topic, value, partition=0):
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    producer.produce(topic, value=value, partition=partition)
    assert producer.flush(flows.DEADLINE_S) == 0


def test_committed_records_reach_read_committed_and_aborted_ones_never(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    producer = txn_producer(bootstrap, topic_name)
    for label, commit in ((b"c1", True), (b"ab", False), (b"c2", True)):
        in_txn(producer, [(topic_name, p, label) for p in (0, 1)], commit=commit)
    # control records take offsets 1, 3 and 5 but never surface as records
    assert read_to_eof(bootstrap, topic_name, [0, 1], "read_committed") == {
        p: flows.VISIBILITY_COMMITTED for p in (0, 1)}
    assert read_to_eof(bootstrap, topic_name, [0, 1], "read_uncommitted") == {
        p: flows.VISIBILITY_ALL for p in (0, 1)}
    assert end_offsets(bootstrap, topic_name, 0) == (flows.VISIBILITY_END, flows.VISIBILITY_END)


#: librdkafka fetching at most one batch per partition and request
ONE_BATCH_PER_FETCH = {"max.partition.fetch.bytes": 1, "fetch.max.bytes": 1000, "message.max.bytes": 1000}


def test_interleaved_transactions_read_committed_from_any_offset(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    aborted, committed = txn_producer(bootstrap, topic_name + "-a"), txn_producer(bootstrap, topic_name + "-b")
    for producer in (aborted, committed):
        producer.begin_transaction()
    for index in range(2):
        for producer, name in ((aborted, b"a"), (committed, b"b")):
            producer.produce(topic_name, value=name + b"%d" % index, partition=0)
            assert producer.flush(flows.DEADLINE_S) == 0
    plain_produce(bootstrap, topic_name, b"plain")
    aborted.abort_transaction(flows.DEADLINE_S)
    committed.commit_transaction(flows.DEADLINE_S)
    assert read_to_eof(bootstrap, topic_name, [0], "read_uncommitted") == {0: flows.INTERLEAVED_ALL}
    for start in flows.INTERLEAVED_STARTS:
        for config in ({}, ONE_BATCH_PER_FETCH):
            assert read_to_eof(bootstrap, topic_name, [0], "read_committed", start, **config) == {
                0: flows.interleaved_committed(start)}, (start, config)
    assert end_offsets(bootstrap, topic_name, 0) == (flows.INTERLEAVED_END, flows.INTERLEAVED_END)


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_open_transaction_holds_read_committed_at_the_lso_until_it_ends(any_broker, topic_name, outcome):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    plain_produce(bootstrap, topic_name, b"before")
    held = txn_producer(bootstrap, topic_name + "-held")
    held.begin_transaction()
    for value in (b"h0", b"h1"):
        held.produce(topic_name, value=value, partition=0)
    assert held.flush(flows.DEADLINE_S) == 0
    plain_produce(bootstrap, topic_name, b"plain")
    in_txn(txn_producer(bootstrap, topic_name + "-other"), [(topic_name, 0, b"other")])

    committed = Reader(bootstrap, topic_name, [0], "read_committed")
    try:
        # EOF at the LSO: the committed "other" and the plain record wait behind the open transaction
        assert committed.to_eof() == {0: flows.HELD_BEFORE}
        assert committed.position(0) == flows.HELD_LSO
        # The other transaction's COMMIT marker lands just after its EndTxn is answered (Kafka writes
        # markers once it has answered): wait for it, then check where the LSO stayed.
        wait_until(lambda: end_offsets(bootstrap, topic_name, 0)[0] == flows.HELD_END_OPEN, "the other's marker")
        assert end_offsets(bootstrap, topic_name, 0) == (flows.HELD_END_OPEN, flows.HELD_LSO)
        assert watermarks(bootstrap, topic_name, 0, "read_uncommitted") == (0, flows.HELD_END_OPEN)
        assert watermarks(bootstrap, topic_name, 0, "read_committed") == (0, flows.HELD_LSO)
        assert read_to_eof(bootstrap, topic_name, [0], "read_uncommitted") == {0: [
            (0, b"before"), (1, b"h0"), (2, b"h1"), (3, b"plain"), (4, b"other")]}

        if outcome == "commit":
            held.commit_transaction(flows.DEADLINE_S)
        else:
            held.abort_transaction(flows.DEADLINE_S)
        assert committed.to_eof() == {0: flows.HELD_BEFORE + flows.HELD_AFTER[outcome]}
    finally:
        committed.close()
    assert end_offsets(bootstrap, topic_name, 0) == (flows.HELD_END, flows.HELD_END)
    assert watermarks(bootstrap, topic_name, 0, "read_committed") == (0, flows.HELD_END)


def _error_of(call):
    with pytest.raises(KafkaException) as raised:
        call()
    error = raised.value.args[0]
    return error.name(), error.fatal(), error.txn_requires_abort(), error.retriable()


def test_a_stalled_transaction_is_aborted_by_the_broker_after_its_timeout(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 1)
    stalled = txn_producer(bootstrap, topic_name, **{"transaction.timeout.ms": flows.STALL_TIMEOUT_MS})
    stalled.begin_transaction()
    stalled.produce(topic_name, value=b"stalled", partition=0)
    assert stalled.flush(flows.DEADLINE_S) == 0
    plain_produce(bootstrap, topic_name, b"after")
    # only the broker's abort releases "after" (librdkafka's EOF comes at the LSO before it)
    reader = Reader(bootstrap, topic_name, [0], "read_committed")
    try:
        wait_until(lambda: reader.to_eof()[0], "the timed-out transaction's abort")
        assert reader.got == {0: [(1, b"after")]}  # "stalled" @0, "after" @1, the ABORT @2
    finally:
        reader.close()
    assert read_to_eof(bootstrap, topic_name, [0], "read_uncommitted") == {0: [(0, b"stalled"), (1, b"after")]}

    stalled.produce(topic_name, value=b"late", partition=0)
    failure = _error_of(lambda: stalled.commit_transaction(flows.DEADLINE_S))
    assert failure == ("_FENCED", True, False, False)  # fatal: the broker bumped the epoch


def test_a_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    zombie = txn_producer(bootstrap, topic_name)
    zombie.begin_transaction()
    zombie.produce(topic_name, value=b"zombie", partition=0)
    assert zombie.flush(flows.DEADLINE_S) == 0
    successor = txn_producer(bootstrap, topic_name)  # zombie @0, the ABORT of its transaction @1
    zombie.produce(topic_name, value=b"zombie-2", partition=1)
    assert _error_of(lambda: zombie.commit_transaction(flows.DEADLINE_S)) == ("_FENCED", True, False, False)
    in_txn(successor, [(topic_name, 0, b"successor")])
    assert read_to_eof(bootstrap, topic_name, [0, 1], "read_committed") == {0: [(2, b"successor")], 1: []}
    assert read_to_eof(bootstrap, topic_name, [0, 1], "read_uncommitted") == {
        0: [(0, b"zombie"), (2, b"successor")], 1: []}


def _committed(bootstrap, group, tp, isolation, timeout=flows.DEADLINE_S):
    """The group's committed offset for tp as a consumer of that isolation level fetches it.

    Under read_committed librdkafka sends OffsetFetch with require_stable, and retries while
    the broker answers UNSTABLE_OFFSET_COMMIT (a transactional offset is pending), until
    ``timeout`` runs out (_TIMED_OUT)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": isolation})
    try:
        [answer] = consumer.committed([tp], timeout=timeout)
        return answer.offset
    except KafkaException as raised:
        return raised.args[0].name()
    finally:
        consumer.close()


def test_offsets_sent_to_a_transaction_with_group_metadata_count_once_it_commits(any_broker, topic_name):
    bootstrap = any_broker.bootstrap
    create_topic(bootstrap, topic_name, 2)
    group = topic_name + "-group"
    tp, other_tp = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                       "auto.offset.reset": "earliest"})
    producer = txn_producer(bootstrap, topic_name)
    try:
        member.subscribe([topic_name])
        wait_until(lambda: member.poll(0.2) is None and len(member.assignment()) == 2, "the group assignment")
        member.commit(offsets=[TopicPartition(topic_name, p, 5) for p in (0, 1)], asynchronous=False)
        for offset, outcome, after in ((10, "commit", 10), (20, "abort", 10), (30, "overtaken", 25)):
            producer.begin_transaction()
            producer.produce(topic_name, value=b"out", partition=0)
            producer.send_offsets_to_transaction([TopicPartition(topic_name, 0, offset)],
                                                 member.consumer_group_metadata(), flows.DEADLINE_S)
            before = 5 if outcome == "commit" else 10
            # pending: require_stable is refused until the transaction ends; without it, the old
            # offset. Only the partition with the pending offset is unstable.
            assert _committed(bootstrap, group, tp, "read_committed", timeout=1) == "_TIMED_OUT"
            assert _committed(bootstrap, group, tp, "read_uncommitted") == before
            assert _committed(bootstrap, group, other_tp, "read_committed") == 5
            if outcome == "overtaken":
                # a plain commit appended after the transactional one is the newer offset, and the
                # transaction's commit does not overwrite it
                member.commit(offsets=[TopicPartition(topic_name, 0, 25)], asynchronous=False)
            if outcome == "abort":
                producer.abort_transaction(flows.DEADLINE_S)
            else:
                producer.commit_transaction(flows.DEADLINE_S)
            assert (_committed(bootstrap, group, tp, "read_committed"),
                    _committed(bootstrap, group, tp, "read_uncommitted")) == (after, after), outcome
    finally:
        member.close()
