"""Admin against the real broker: consumer groups and their committed offsets, with an active
confluent-kafka member where the coordinator's answer depends on one."""

import asyncio
import time

import pytest
from confluent_kafka import Consumer as CKConsumer

from weir.client import Admin
from weir.client.admin import NewTopic
from weir.client.errors import (GroupIdNotFoundError, GroupSubscribedToTopicError, NonEmptyGroupError,
                           UnknownMemberIdError, UnknownTopicOrPartitionError)
from weir.client.types import OffsetAndMetadata, TopicPartition
from tests.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("groups") / "data",
                            overrides={"group.initial.rebalance.delay.ms": "0"}).start()
    yield process
    process.stop()


@pytest.fixture
async def admin(group_broker):
    async with Admin(group_broker.bootstrap) as client:
        yield client


def join(bootstrap, group, topic) -> CKConsumer:
    """A confluent-kafka member that has joined ``group`` and been assigned ``topic``'s partitions."""
    consumer = CKConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "lag-watcher",
                           "enable.auto.commit": False, "session.timeout.ms": 45000})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the member was never assigned partitions"
        consumer.poll(0.1)
    return consumer


async def test_offsets_of_an_inactive_group_listed_altered_deleted(admin, topic_name):
    group = f"{topic_name}-g"
    tp0, tp1 = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    await admin.create_topics([NewTopic(topic_name, 2, 1)])
    assert await admin.list_group_offsets(group) == {}
    await admin.alter_group_offsets(group, {tp0: OffsetAndMetadata(7, "by hand"), tp1: 3})
    assert await admin.list_group_offsets(group) == {tp0: OffsetAndMetadata(7, "by hand"), tp1: OffsetAndMetadata(3)}
    assert await admin.list_group_offsets(group, [tp1]) == {tp1: OffsetAndMetadata(3)}
    [listed] = [g for g in await admin.list_groups() if g.group_id == group]
    assert listed.state == "Empty"
    assert group in [g.group_id for g in await admin.list_groups(states=["Empty"])]
    assert group not in [g.group_id for g in await admin.list_groups(states=["Stable"])]
    described = (await admin.describe_groups([group]))[group]
    assert (described.state, described.members, described.coordinator_id) == ("Empty", [], 0)
    await admin.delete_group_offsets(group, [tp0])
    assert await admin.list_group_offsets(group) == {tp1: OffsetAndMetadata(3)}
    await admin.delete_groups([group])
    assert group not in [g.group_id for g in await admin.list_groups()]
    assert await admin.list_group_offsets(group) == {}


async def test_unknown_groups(admin, topic_name):
    group = f"{topic_name}-none"
    with pytest.raises(GroupIdNotFoundError, match=group):
        await admin.describe_groups([group])
    with pytest.raises(GroupIdNotFoundError):
        await admin.delete_groups([group])
    with pytest.raises(GroupIdNotFoundError):
        await admin.delete_group_offsets(group, [TopicPartition(topic_name, 0)])


async def test_offsets_of_an_unknown_topic(admin, topic_name):
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.alter_group_offsets(f"{topic_name}-g", {TopicPartition(topic_name + "-none", 0): 1})


async def test_an_active_group_is_described_and_protected(admin, group_broker, topic_name):
    group = f"{topic_name}-g"
    tp0, tp1 = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
    await admin.create_topics([NewTopic(topic_name, 2, 1)])
    await admin.alter_group_offsets(group, {tp0: 0, tp1: 0})
    consumer = await asyncio.to_thread(join, group_broker.bootstrap, group, topic_name)
    try:
        described = (await admin.describe_groups([group]))[group]
        assert (described.state, described.protocol_type, described.protocol) == ("Stable", "consumer", "range")
        [member] = described.members
        assert (member.client_id, member.client_host, member.assignment) == ("lag-watcher", "/127.0.0.1", [tp0, tp1])
        assert [g.state for g in await admin.list_groups() if g.group_id == group] == ["Stable"]
        with pytest.raises(NonEmptyGroupError):
            await admin.delete_groups([group])
        with pytest.raises(GroupSubscribedToTopicError):
            await admin.delete_group_offsets(group, [tp0])
        with pytest.raises(UnknownMemberIdError):  # generation -1 is only for a group without members
            await admin.alter_group_offsets(group, {tp0: 5})
    finally:
        await asyncio.to_thread(consumer.close)
    assert (await admin.describe_groups([group]))[group].state == "Empty"
    await admin.alter_group_offsets(group, {tp0: 5})
    assert (await admin.list_group_offsets(group))[tp0].offset == 5
