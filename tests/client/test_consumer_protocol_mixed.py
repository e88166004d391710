"""One group, members speaking different protocols, on Weir and Apache Kafka 4.4.0: our classic consumer
beside our consumer-protocol one (the broker serves the classic member through the consumer group,
KIP-848's online migration), and confluent-kafka with group.protocol=consumer beside ours. The
assignment is complete and disjoint, no partition is owned by two members at any moment, and every
record is read once."""

from __future__ import annotations

import asyncio

from weir.client import TopicPartition
from tests.reference.test_consumer_protocol_confluent import Member
from tests.support.consumer_groups import PARTITIONS, Group, produce
from tests.support.topics import create_topic
from tests.support.waiting import wait_until_async

RECORDS = 120


def every_record(count: int) -> list[tuple[int, int]]:
    return sorted((i % PARTITIONS, i // PARTITIONS) for i in range(count))


def overlaps(spans: list[tuple[int, str, float, float]]) -> list[str]:
    """Pairs of spans of different owners of one partition that overlap in time."""
    found = []
    for i, (partition, owner, start, end) in enumerate(spans):
        for other_partition, other, other_start, other_end in spans[i + 1:]:
            if partition == other_partition and owner != other and start < other_end and other_start < end:
                found.append(f"partition {partition}: {owner} [{start:.3f}, {end:.3f}] and "
                             f"{other} [{other_start:.3f}, {other_end:.3f}]")
    return found


async def test_our_classic_member_and_our_consumer_protocol_member_share_a_group(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    await produce(any_broker.bootstrap, topic_name, 0, RECORDS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    try:
        await group.add("new")
        await wait_until_async(group.balanced(["new"]), "the consumer-protocol member with every partition", 60)
        await group.add("classic", group_protocol="classic", heartbeat_interval_ms=200,
                        partition_assignment_strategy=["cooperative-sticky"])
        await wait_until_async(group.balanced(["new", "classic"]), "6 partitions each", 60)
        assert group.ownership.violations == []
        await wait_until_async(lambda: len(group.seen) >= RECORDS, lambda: f"{len(group.seen)} records read", 60)
        await group.remove("classic")
        await wait_until_async(group.balanced(["new"]), "the classic member's partitions back", 60)
        await produce(any_broker.bootstrap, topic_name, RECORDS, RECORDS)
        await wait_until_async(lambda: len(group.seen) >= 2 * RECORDS, lambda: f"{len(group.seen)} records read", 60)
        assert group.ownership.violations == []
    finally:
        await group.close()
    assert sorted(group.seen) == every_record(2 * RECORDS)


async def test_confluent_kafka_and_our_consumer_share_a_consumer_protocol_group(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    await produce(any_broker.bootstrap, topic_name, 0, RECORDS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    confluent = Member(any_broker.bootstrap, topic_name, f"{topic_name}-g", "confluent")
    try:
        await group.add("ours")
        await wait_until_async(group.balanced(["ours"]), "our member with every partition", 60)
        confluent.start()
        await wait_until_async(lambda: len(group.ownership.of("ours")) == PARTITIONS // 2
                               and len(confluent.owned) == PARTITIONS // 2, "6 partitions each", 60)
        ours = group.consumers["ours"].assignment()
        theirs = {TopicPartition(topic_name, p) for p in confluent.owned}
        assert ours | theirs == {TopicPartition(topic_name, p) for p in range(PARTITIONS)} and not ours & theirs
        await wait_until_async(lambda: len(group.seen) + len(confluent.values) >= RECORDS,
                               lambda: f"{len(group.seen)} + {len(confluent.values)} records read", 60)
        await asyncio.to_thread(confluent.stop)  # leaves: its partitions come back to ours
        await wait_until_async(group.balanced(["ours"]), "every partition back with our member", 60)
        await produce(any_broker.bootstrap, topic_name, RECORDS, RECORDS)
        await wait_until_async(lambda: len(group.seen) + len(confluent.values) >= 2 * RECORDS,
                               lambda: f"{len(group.seen)} + {len(confluent.values)} records read", 60)
    finally:
        if confluent.is_alive():
            await asyncio.to_thread(confluent.stop)
        await group.close()
    assert confluent.errors == []
    assert group.ownership.violations == []
    spans = group.ownership.spans + [(p, "confluent", start, end) for p, start, end in confluent.spans]
    assert overlaps(spans) == []
    theirs_read = [(int(v) % PARTITIONS, int(v) // PARTITIONS) for v in confluent.values]
    assert sorted(group.seen + theirs_read) == every_record(2 * RECORDS)
