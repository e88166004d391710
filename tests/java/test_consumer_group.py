"""Three Java consumers (separate processes) in one read_committed group, the third joining
mid-way, with the classic protocol (cooperative-sticky) and with the consumer protocol (KIP-848,
the broker assigning), against each broker: no partition is owned by two members at once
(from the assignments each logs with the machine's monotonic clock), every committed record is
consumed exactly once and no aborted one is."""

import itertools
import time

import pytest

from confluent_kafka import Producer

from tests.java.java_client import JavaProcess
from tests.support.topics import create_topic
from tests.support.waiting import wait_until

PARTITIONS = 6


def produce_transactions(bootstrap: str, topic: str, txn_id: str, prefix: str, committed: int,
                         aborted: int) -> list[str]:
    """``committed`` records in one committed transaction, ``aborted`` in an aborted one; the committed values."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(aborted):
        producer.produce(topic, key=f"a{i}", value=f"{prefix}-aborted-{i}")
    producer.abort_transaction(30)
    producer.begin_transaction()
    values = [f"{prefix}-committed-{i}" for i in range(committed)]
    for i, value in enumerate(values):
        producer.produce(topic, key=f"k{i}", value=value)
    producer.commit_transaction(30)
    return values


def consumed(members: list[JavaProcess]) -> list[str]:
    return [event["value"] for member in members for event in list(member.events) if event["event"] == "record"]


def ownership(member: JavaProcess) -> list[tuple[int, int, int]]:
    """(partition, from, to) for each time ``member`` owned a partition, in nanoTime units."""
    owned: dict[int, int] = {}
    spans = []
    for event in member.events:
        if event["event"] == "assigned":
            for partition in event["partitions"]:
                assert partition not in owned, f"{partition} assigned twice without a revocation: {event}"
                owned[partition] = event["t"]
        elif event["event"] in ("revoked", "lost"):
            for partition in event["partitions"]:
                spans.append((partition, owned.pop(partition), event["t"]))
        elif event["event"] == "closed":
            assert not owned, f"closed while still owning {owned}"
    return spans


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_with_a_member_joining_midway(any_broker, topic_name, protocol):
    bootstrap, group = any_broker.bootstrap, f"{topic_name}-group"
    create_topic(bootstrap, topic_name, PARTITIONS)
    expected = produce_transactions(bootstrap, topic_name, f"{topic_name}-txn1", "first", 120, 30)
    members = [JavaProcess("GroupMember", bootstrap, topic_name, group, name, protocol) for name in ("a", "b")]
    try:
        wait_until(lambda: set(expected) <= set(consumed(members)), "the first batch", 60)
        members.append(JavaProcess("GroupMember", bootstrap, topic_name, group, "c", protocol))
        members[2].wait_for(lambda event: event["event"] == "started")
        expected += produce_transactions(bootstrap, topic_name, f"{topic_name}-txn2", "second", 120, 20)
        members[2].wait_for(lambda event: event["event"] == "assigned" and event["partitions"])
        expected += produce_transactions(bootstrap, topic_name, f"{topic_name}-txn3", "third", 60, 10)
        wait_until(lambda: set(expected) <= set(consumed(members)), "the second and third batches", 60)
        # Members then close one by one. A member that closes while the group rebalances after an
        # earlier one left reports its partitions lost, not revoked (the Java consumer's
        # onLeavePrepare does so mid-rebalance), so "lost" counts only before this point.
        stopping = time.monotonic_ns()  # the clock of the members' System.nanoTime()
        for member in members:
            member.stop()
    finally:
        for member in members:
            member.kill()

    values = consumed(members)
    assert sorted(values) == sorted(expected), "each committed record once, no aborted one"
    spans = {member.events[0]["member"]: ownership(member) for member in members}
    for (name_a, spans_a), (name_b, spans_b) in itertools.combinations(spans.items(), 2):
        for (partition_a, start_a, end_a), (partition_b, start_b, end_b) in itertools.product(spans_a, spans_b):
            if partition_a == partition_b:
                assert end_a <= start_b or end_b <= start_a, \
                    f"partition {partition_a} owned by {name_a} and {name_b} at once"
    # records came to a member only while it owned their partition
    for member in members:
        name = member.events[0]["member"]
        for event in member.events:
            if event["event"] == "record":
                assert any(p == event["partition"] and start <= event["t"] <= end for p, start, end in spans[name])
    assert any(event["event"] == "record" for event in members[2].events), "the member that joined consumed"
    # cooperative: nobody lost partitions while the group ran, and each member's generations only grow
    for member in members:
        assert not [event for event in member.events if event["event"] == "lost" and event["t"] < stopping]
        generations = [event["generation"] for event in member.events if event["event"] == "assigned"]
        assert generations == sorted(generations)
