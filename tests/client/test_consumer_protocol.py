"""Our consumer with group_protocol="consumer" (KIP-848) against Weir and Apache Kafka 4.4.0: the broker
assigns, members reconcile incrementally; checked through the rebalance hooks (no partition is owned
by two members at any moment), the records consumed (each once) and the epochs the member carries."""

from __future__ import annotations

import asyncio

from weir.client import Consumer, Producer, TopicPartition
from weir.client.consumer.membership import MemberState
from tests.support.consumer_groups import PARTITIONS, Group, produce
from tests.support.topics import create_topic
from tests.support.waiting import wait_until_async

RECORDS = 240


async def test_three_members_share_twelve_partitions_and_read_every_record_once(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    await produce(any_broker.bootstrap, topic_name, 0, RECORDS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    try:
        for name in ("a", "b", "c"):
            await group.add(name)
        await wait_until_async(group.balanced(["a", "b", "c"]), "three members with 4 partitions each", 60)
        await wait_until_async(lambda: len(group.seen) >= RECORDS, lambda: f"{len(group.seen)} records read", 60)
        assignments = [group.consumers[n].assignment() for n in ("a", "b", "c")]
        assert set().union(*assignments) == {TopicPartition(topic_name, p) for p in range(PARTITIONS)}
        assert sum(len(a) for a in assignments) == PARTITIONS  # disjoint
        assert [len(a) for a in assignments] == [4, 4, 4]
        epochs = [group.consumers[n].group.member_epoch for n in ("a", "b", "c")]  # type: ignore[union-attr]
        assert all(epoch > 0 for epoch in epochs)
        assert group.ownership.violations == []
    finally:
        await group.close()
    assert sorted(group.seen) == sorted({(i % PARTITIONS, i // PARTITIONS) for i in range(RECORDS)})


async def test_a_member_leaving_hands_its_partitions_to_the_others(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    try:
        for name in ("a", "b", "c"):
            await group.add(name)
        await wait_until_async(group.balanced(["a", "b", "c"]), "three members with 4 partitions each", 60)
        leaving = group.ownership.of("c")
        kept = {name: group.ownership.of(name) for name in ("a", "b")}
        group.ownership.revoked.clear()
        await group.remove("c")  # revokes its partitions, then leaves with epoch -1
        await wait_until_async(group.balanced(["a", "b"]), "two members with 6 partitions each", 60)
        for name in ("a", "b"):
            assert kept[name] <= group.ownership.of(name)  # sticky: only c's partitions moved
            assert name not in group.ownership.revoked
        assert leaving == (group.ownership.of("a") | group.ownership.of("b")) - kept["a"] - kept["b"]
        await produce(any_broker.bootstrap, topic_name, 0, RECORDS)
        await wait_until_async(lambda: len(group.seen) >= RECORDS, lambda: f"{len(group.seen)} records read", 60)
        assert group.ownership.violations == []
    finally:
        await group.close()
    assert sorted(group.seen) == sorted({(i % PARTITIONS, i // PARTITIONS) for i in range(RECORDS)})


async def test_a_member_joining_takes_partitions_only_after_their_owners_revoked_them(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    await produce(any_broker.bootstrap, topic_name, 0, RECORDS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    try:
        for name in ("a", "b"):
            await group.add(name)
        await wait_until_async(group.balanced(["a", "b"]), "two members with 6 partitions each", 60)
        before = {name: group.ownership.of(name) for name in ("a", "b")}
        group.ownership.revoked.clear()
        await group.add("c")
        await wait_until_async(group.balanced(["a", "b", "c"]), "three members with 4 partitions each", 60)
        for name in ("a", "b"):  # incremental: each gave up 2 of its 6 and kept the rest throughout
            assert len(group.ownership.revoked[name]) == 2
            assert group.ownership.of(name) == before[name] - set(group.ownership.revoked[name])
        assert group.ownership.of("c") == set(group.ownership.revoked["a"]) | set(group.ownership.revoked["b"])
        assert group.ownership.violations == []
        await wait_until_async(lambda: len(group.seen) >= RECORDS, lambda: f"{len(group.seen)} records read", 60)
    finally:
        await group.close()
    assert sorted(group.seen) == sorted({(i % PARTITIONS, i // PARTITIONS) for i in range(RECORDS)})


async def test_a_fenced_member_loses_its_partitions_and_joins_again_with_its_member_id(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    try:
        consumer = await group.add("a")
        membership = consumer.group
        await wait_until_async(group.balanced(["a"]), "one member with every partition", 60)
        member_id, epoch = membership.member_id, membership.member_epoch  # type: ignore[union-attr]
        lost: list[set[TopicPartition]] = []
        listener = membership.listener  # type: ignore[union-attr]
        original = listener.on_partitions_lost

        async def on_lost(partitions: set[TopicPartition]) -> None:
            lost.append(partitions)
            await original(partitions)
        listener.on_partitions_lost = on_lost


        def fenced() -> bool:
            # a future epoch: FENCED_MEMBER_EPOCH. Set again until it is sent: the answer to a heartbeat
            # already in flight (the acknowledgement) carries the current epoch back.
            if not lost and membership.state is MemberState.STABLE:  # type: ignore[union-attr]
                membership.member_epoch = epoch + 10  # type: ignore[union-attr]
            return bool(lost)
        await wait_until_async(fenced, "the partitions lost on FENCED_MEMBER_EPOCH", 30)
        assert lost == [{TopicPartition(topic_name, p) for p in range(PARTITIONS)}]
        await wait_until_async(group.balanced(["a"]), "the member back with every partition", 60)
        assert membership.member_id == member_id  # type: ignore[union-attr]  # KIP-1082: its id for life
        assert membership.member_epoch >= epoch  # type: ignore[union-attr]
    finally:
        await group.close()


async def test_a_regex_subscription_is_resolved_by_the_broker(any_broker, topic_name):
    names = [f"{topic_name}-x{i}" for i in range(2)]
    for name in names:
        await asyncio.to_thread(create_topic, any_broker.bootstrap, name, 3)
    await asyncio.to_thread(create_topic, any_broker.bootstrap, f"{topic_name}-other", 3)
    async with Consumer(bootstrap_servers=any_broker.bootstrap, group_id=f"{topic_name}-g", group_protocol="consumer",
                        auto_offset_reset="earliest") as consumer:
        consumer.subscribe(pattern=f"{topic_name}-x.*")
        async with Producer(any_broker.bootstrap) as producer:
            for name in names:
                await producer.send(name, b"v", partition=0)
        got: list[str] = []
        while len(got) < 2:
            got += [tp.topic for tp in (await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30))]
        assert sorted(got) == names
        assert consumer.assignment() == {TopicPartition(n, p) for n in names for p in range(3)}


async def test_a_static_member_keeps_its_partitions_across_a_restart(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    try:
        await group.add("a", group_instance_id="instance-a")
        await group.add("b", group_instance_id="instance-b")
        await wait_until_async(group.balanced(["a", "b"]), "two static members with 6 partitions each", 60)
        owned_by_a = group.ownership.of("a")
        await group.remove("a")  # leaves with epoch -2: its place and partitions are kept for it
        await group.add("a", group_instance_id="instance-a")
        await wait_until_async(group.balanced(["a", "b"]), "the static member back", 60)
        assert group.ownership.of("a") == owned_by_a
        assert "b" not in group.ownership.revoked  # b never gave anything up meanwhile
        assert group.ownership.violations == []
    finally:
        await group.close()


async def test_a_member_that_stops_polling_leaves_and_joins_again_on_its_next_getmany(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    group = Group(any_broker.bootstrap, topic_name, f"{topic_name}-g")
    try:
        await group.add("a")
        await group.add("b", max_poll_interval_ms=3000)
        await wait_until_async(group.balanced(["a", "b"]), "6 partitions each", 60)
        group.stop["b"].set()
        await asyncio.wait_for(group.tasks.pop("b"), 30)  # b stops calling getmany
        await wait_until_async(lambda: len(group.ownership.of("a")) == PARTITIONS,
                               "a with every partition once b left after max_poll_interval_ms", 60)
        assert group.consumers["b"].group.state is MemberState.STALE  # type: ignore[union-attr]
        assert not group.consumers["b"].assignment()  # lost, not committed
        group.stop["b"].clear()
        group.tasks["b"] = asyncio.create_task(group._consume(group.consumers["b"], group.stop["b"]))
        await wait_until_async(group.balanced(["a", "b"]), "b back with 6 partitions", 60)
        assert group.ownership.violations == []
    finally:
        await group.close()


async def test_auto_commit_commits_revoked_partitions_before_they_move(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    await produce(any_broker.bootstrap, topic_name, 0, RECORDS)
    seen: list[tuple[int, int]] = []
    common = dict(bootstrap_servers=any_broker.bootstrap, group_id=f"{topic_name}-g", auto_offset_reset="earliest",
                  group_protocol="consumer", enable_auto_commit=True, auto_commit_interval_ms=600000)
    async with Consumer(topic_name, **common) as first:  # type: ignore[arg-type]
        while len(seen) < RECORDS // 2:  # half read; nothing committed yet (the interval is long)
            for batch in (await asyncio.wait_for(first.getmany(timeout_ms=200, max_records=10), 30)).values():
                seen.extend((r.partition, r.offset) for r in batch)
        async with Consumer(topic_name, **common) as second:  # type: ignore[arg-type]
            async def poll(consumer: Consumer) -> bool:
                for batch in (await consumer.getmany(timeout_ms=50)).values():
                    seen.extend((r.partition, r.offset) for r in batch)
                return len(seen) >= RECORDS and len(first.assignment()) == len(second.assignment()) == 6

            async def both() -> bool:
                return all(await asyncio.gather(poll(first), poll(second)))
            await wait_until_async(both, lambda: f"{len(seen)} records read", 60, interval=0)
    assert sorted(seen) == sorted({(i % PARTITIONS, i // PARTITIONS) for i in range(RECORDS)})  # none twice


async def test_a_changed_topic_list_is_sent_and_reassigned(any_broker, topic_name):
    first, second = f"{topic_name}-1", f"{topic_name}-2"
    for name in (first, second):
        await asyncio.to_thread(create_topic, any_broker.bootstrap, name, 2)
    async with Consumer(first, bootstrap_servers=any_broker.bootstrap, group_id=f"{topic_name}-g",
                        group_protocol="consumer", group_remote_assignor="range") as consumer:
        async def holds(expected: set[TopicPartition]) -> bool:
            await consumer.getmany(timeout_ms=100)
            return consumer.assignment() == expected
        await wait_until_async(lambda: holds({TopicPartition(first, 0), TopicPartition(first, 1)}),
                               f"{first}'s partitions", 60, interval=0)
        consumer.subscribe(first, second)
        await wait_until_async(lambda: holds({TopicPartition(t, p) for t in (first, second) for p in (0, 1)}),
                               "both topics' partitions", 60, interval=0)
        consumer.subscribe(second)
        await wait_until_async(lambda: holds({TopicPartition(second, 0), TopicPartition(second, 1)}),
                               f"{second}'s partitions only", 60, interval=0)
