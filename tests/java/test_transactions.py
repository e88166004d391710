"""Transactions through the Java producer and consumer, the same assertions against each broker:
commit and abort visibility, the LSO holding a read_committed consumer until the transaction
ends, a transaction the broker times out, a fenced zombie, and transactional offsets in a
consume-transform-produce loop."""

import pytest
from confluent_kafka import Producer

from weir.protocol.errors import Errors
from weir.protocol.messages.update_features import SAFE_DOWNGRADE, UPGRADE
from tests.features.raw import TV, update, wait_for_level
from tests.java.java_client import only, read_all, run
from tests.support.topics import create_topic


def values(records) -> list[str]:
    return [record.value().decode() for record in records]


def test_commit_and_abort_visibility(any_broker, topic_name):
    create_topic(any_broker.bootstrap, topic_name, 1)
    events = run("Transactions", "commit-abort", any_broker.bootstrap, topic_name, f"{topic_name}-txn")
    committed = ["committed-1", "committed-2", "committed-3", "committed-4", "committed-5"]
    assert only(events, "read_committed")["values"] == committed
    # 8 data records, three markers: the consumer's position is the partition's end
    assert only(events, "read_committed")["position"] == 11
    assert values(read_all(any_broker.bootstrap, topic_name, 1)[0]) == committed
    uncommitted = values(read_all(any_broker.bootstrap, topic_name, 1, isolation="read_uncommitted")[0])
    assert uncommitted == committed[:3] + ["aborted-1", "aborted-2", "aborted-3"] + committed[3:]


def test_lso_holds_a_read_committed_consumer_until_the_transaction_commits(any_broker, topic_name):
    create_topic(any_broker.bootstrap, topic_name, 1)
    events = run("Transactions", "lso", any_broker.bootstrap, topic_name, f"{topic_name}-txn")
    held = only(events, "held")
    assert held == {"event": "held", "values": [], "position": 0, "last_stable_offset": 0, "end_offset": 2}
    released = only(events, "released")
    assert released["values"] == ["open-1", "plain-after-open"]
    assert released["last_stable_offset"] == 3  # past the commit marker


def test_a_second_producer_fences_the_zombie(any_broker, topic_name):
    create_topic(any_broker.bootstrap, topic_name, 1)
    events = run("Transactions", "zombie", any_broker.bootstrap, topic_name, f"{topic_name}-txn")
    fenced = only(events, "first_fenced")
    # What Kafka 4.3 gives the Java client: the zombie's next send fails with
    # InvalidProducerEpochException (its transaction was aborted at a newer epoch) and so does
    # its commit, which reports the error the send left.
    assert fenced == {"event": "first_fenced", "send": "InvalidProducerEpochException",
                      "commit": "InvalidProducerEpochException"}
    assert only(events, "read_committed")["values"] == ["successor-1"]


def test_a_timed_out_transaction_is_aborted_by_the_broker(any_broker, topic_name):
    create_topic(any_broker.bootstrap, topic_name, 1)
    events = run("Transactions", "timeout", any_broker.bootstrap, topic_name, f"{topic_name}-txn")
    assert only(events, "open")["last_stable_offset"] == 0
    assert only(events, "aborted_by_broker")["last_stable_offset"] == 2  # past the abort marker
    after = only(events, "after_timeout")
    # The producer learns of the abort from its next send, an abortable error in both.
    assert (after["send"], after["commit"]) == ("InvalidProducerEpochException", "InvalidProducerEpochException")
    # Both finalize transaction.version 2 (KIP-890): the client's EndTxn(ABORT) at the old epoch
    # counts as a retry of the coordinator's epoch-bumping abort and hands the producer the new
    # epoch, so the producer carries on (at version 1 it was PRODUCER_FENCED: see
    # test_a_timed_out_transaction_at_transaction_version_1).
    assert (after["abort"], after["next"]) == ("ok", "ok")
    committed = ["next-1"]
    assert values(read_all(any_broker.bootstrap, topic_name, 1)[0]) == committed


@pytest.fixture
def at_transaction_version_1(any_broker):
    """The broker finalizes transaction.version 1 for one test (UpdateFeatures, as kafka-features
    downgrade does), and 2 again afterwards."""
    assert update(any_broker, 2, (TV, 1, SAFE_DOWNGRADE))[0] == Errors.NONE
    assert wait_for_level(any_broker, 1)[1] == 1
    yield
    assert update(any_broker, 2, (TV, 2, UPGRADE))[0] == Errors.NONE
    assert wait_for_level(any_broker, 2)[1] == 2


def test_a_timed_out_transaction_at_transaction_version_1(any_broker, at_transaction_version_1, topic_name):
    """At version 1 (both brokers finalizing it) the producer reads the level and speaks version 1:
    its EndTxn(ABORT) at the epoch the coordinator's abort bumped is PRODUCER_FENCED, and the
    application must make a new producer."""
    create_topic(any_broker.bootstrap, topic_name, 1)
    events = run("Transactions", "timeout", any_broker.bootstrap, topic_name, f"{topic_name}-txn")
    after = only(events, "after_timeout")
    assert (after["send"], after["commit"]) == ("InvalidProducerEpochException", "InvalidProducerEpochException")
    assert (after["abort"], after["next"]) == ("ProducerFencedException", "ProducerFencedException")
    assert values(read_all(any_broker.bootstrap, topic_name, 1)[0]) == []


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consume_transform_produce_commits_offsets_with_the_output(any_broker, topic_name, protocol):
    source, sink, group = f"{topic_name}-in", f"{topic_name}-out", f"{topic_name}-group"
    create_topic(any_broker.bootstrap, source, 3)
    create_topic(any_broker.bootstrap, sink, 3)
    producer = Producer({"bootstrap.servers": any_broker.bootstrap})
    count = 60
    for i in range(count):
        producer.produce(source, key=f"k{i % 11}", value=f"v{i}")
    assert producer.flush(10) == 0
    ends = {partition: len(records) for partition, records in read_all(any_broker.bootstrap, source, 3).items()}

    events = run("ConsumeTransformProduce", any_broker.bootstrap, source, sink, group, f"{topic_name}-txn", count,
                 protocol)
    assert only(events, "aborted")["committed"] == {}  # the aborted transaction's offsets never count
    assert only(events, "processed")["records"] == count
    # KIP-447: the generation (the member epoch with the consumer protocol) fences a zombie's offsets
    # (ILLEGAL_GENERATION on TxnOffsetCommit for both protocols, as Kafka 4.3 answers)
    assert only(events, "zombie_offsets")["errors"] == {"newer": "CommitFailedException",
                                                        "older": "CommitFailedException"}
    assert only(events, "group_offsets")["committed"] == {str(p): end for p, end in ends.items() if end}

    output = read_all(any_broker.bootstrap, sink, 3)
    written = sorted(v for records in output.values() for v in values(records))
    assert written == sorted(f"out-v{i}" for i in range(count))
    uncommitted = read_all(any_broker.bootstrap, sink, 3, isolation="read_uncommitted")
    aborted = only(events, "aborted")["records"]
    assert sum(len(records) for records in uncommitted.values()) == count + aborted
