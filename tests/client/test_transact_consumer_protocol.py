"""Exactly-once on a consumer-protocol member (KIP-848 with KIP-447), on Weir and Apache Kafka 4.4.0:
GroupTransactSession consuming with group_protocol="consumer" turns every input into one committed
output, and its offsets carry the member id and member epoch (the generation of group_metadata(), as
the Java consumer's ConsumerGroupMetadata); a member epoch the group has moved past is refused."""

from __future__ import annotations

import asyncio

import pytest

from weir.client import Consumer, GroupTransactSession, Producer, TopicPartition
from weir.client.consumer.group import CommitFailedError
from weir.client.consumer.membership import MemberState
from weir.client.producer.transaction_manager import TxnState
from tests.client.txn_helpers import new_topic, read_committed
from tests.support.waiting import wait_until_async

INPUTS = 30


async def test_a_consumer_protocol_session_outputs_every_input_once_and_commits_its_offsets(any_broker, topic_name):
    source = await new_topic(any_broker.bootstrap, f"{topic_name}-in", 3)
    output = await new_topic(any_broker.bootstrap, f"{topic_name}-out", 1)
    async with Producer(any_broker.bootstrap) as producer:
        for i in range(INPUTS):
            await producer.send(source, str(i).encode(), partition=i % 3)
    group_id = f"{topic_name}-g"
    session = GroupTransactSession(source, bootstrap_servers=any_broker.bootstrap, group_id=group_id,
                                   transactional_id=f"{topic_name}-tx", consumer_options={"group_protocol": "consumer"})
    async with session:
        done = 0
        while done < INPUTS:
            for batch in (await asyncio.wait_for(session.getmany(timeout_ms=200), 30)).values():
                for record in batch:
                    await session.send(output, b"out-" + record.value, partition=0)
                    done += 1
            if session.in_transaction:
                metadata = session.consumer.group_metadata()
                assert metadata.generation_id == session.consumer.group.member_epoch > 0  # type: ignore[union-attr]
                assert metadata.member_id == session.consumer.group.member_id  # type: ignore[union-attr]
                assert await session.end() is True
    assert sorted(await read_committed(any_broker.bootstrap, output)) == sorted(b"out-%d" % i for i in range(INPUTS))
    async with Consumer(bootstrap_servers=any_broker.bootstrap, group_id=group_id) as reader:
        committed = {p: await reader.committed(TopicPartition(source, p)) for p in range(3)}
    assert {p: c.offset for p, c in committed.items() if c is not None} == {p: INPUTS // 3 for p in range(3)}


async def test_offsets_sent_with_a_member_epoch_the_group_moved_past_are_refused(any_broker, topic_name):
    topic = await new_topic(any_broker.bootstrap, topic_name, 2)
    settings = dict(bootstrap_servers=any_broker.bootstrap, group_id=f"{topic}-g", enable_auto_commit=False,
                    auto_offset_reset="earliest", group_protocol="consumer")
    first, second = Consumer(topic, **settings), Consumer(topic, **settings)  # type: ignore[arg-type]
    await first.start()
    try:
        async def holds(consumer: Consumer, partitions: int) -> bool:
            await consumer.getmany(timeout_ms=100)  # reconciles
            return len(consumer.assignment()) == partitions and consumer.group.state is MemberState.STABLE  # type: ignore

        async def one_each() -> bool:
            return all(await asyncio.gather(holds(first, 1), holds(second, 1)))
        await wait_until_async(lambda: holds(first, 2), "the first member with both partitions", 60, interval=0)
        stale = first.group_metadata()
        await second.start()
        await wait_until_async(one_each, "one partition each", 60, interval=0)
        assert first.group_metadata().generation_id > stale.generation_id  # its epoch moved on
        assert stale.member_id == first.group_metadata().member_id
        async with Producer(any_broker.bootstrap, transactional_id=f"{topic}-tx") as producer:
            producer.begin_transaction()
            moved = next(iter(second.assignment()))  # the first member's at the stale epoch, no longer
            with pytest.raises(CommitFailedError) as raised:
                await producer.send_offsets_to_transaction({moved: 5}, stale)
            # Kafka (4.3.1, 4.4.0) answers a consumer-protocol member's stale epoch on TxnOffsetCommit with
            # ILLEGAL_GENERATION (STALE_MEMBER_EPOCH is for OffsetCommit), which the Java producer makes an
            # abortable CommitFailedException; an epoch still valid for a partition it owns is accepted.
            assert "ILLEGAL_GENERATION" in str(raised.value)
            assert raised.value.abortable
            assert producer.transaction_manager.state is TxnState.ABORTABLE_ERROR
            await producer.abort_transaction()
            kept = next(iter(first.assignment()))
            async with producer.transaction():  # the current member epoch is accepted
                await producer.send_offsets_to_transaction({kept: 3}, first.group_metadata())
            async with producer.transaction():  # and so is the old one for a partition it kept since then
                await producer.send_offsets_to_transaction({kept: 4}, stale)
        assert (await first.committed(kept)).offset == 4  # type: ignore[union-attr]
    finally:
        await second.close()
        await first.close()
