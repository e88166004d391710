"""Our consumer with group_protocol="consumer" (KIP-848) against Weir and Apache Kafka 4.3.1: the broker
assigns, members reconcile incrementally; checked through the rebalance hooks (no partition is owned
by two members at any moment), the records consumed (each once) and the epochs the member carries."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from weir.client import Consumer, Producer, TopicPartition
from weir.client.consumer.membership import MemberState
from tests.support.topics import create_topic
from tests.support.waiting import wait_until_async

PARTITIONS = 12
RECORDS = 240


class Ownership:
    """Rebalance hooks for every member: who owns what now, what each was ever given or had revoked,
    and any moment at which a partition was given to a member while another still owned it."""

    def __init__(self) -> None:
        self.owner: dict[TopicPartition, str] = {}
        self.violations: list[str] = []
        self.revoked: dict[str, list[TopicPartition]] = {}

    def listener(self, name: str) -> object:
        ownership = self

        class Listener:
            async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
                for tp in assigned:
                    if ownership.owner.get(tp, name) != name:
                        ownership.violations.append(f"{tp} given to {name} while {ownership.owner[tp]} owns it")
                    ownership.owner[tp] = name

            async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
                ownership.revoked.setdefault(name, []).extend(revoked)
                for tp in revoked:
                    ownership.owner.pop(tp, None)

            on_partitions_lost = on_partitions_revoked
        return Listener()

    def of(self, name: str) -> set[TopicPartition]:
        return {tp for tp, owner in self.owner.items() if owner == name}


class Group:
    """Consumers of one group, each consuming in its own task and committing after every batch."""

    def __init__(self, bootstrap: str, topic: str, group_id: str, **options: object) -> None:
        self.bootstrap, self.topic, self.group_id, self.options = bootstrap, topic, group_id, options
        self.ownership = Ownership()
        self.consumers: dict[str, Consumer] = {}
        self.seen: list[tuple[int, int]] = []
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.stop: dict[str, asyncio.Event] = {}

    async def add(self, name: str, **options: object) -> Consumer:
        settings = dict(bootstrap_servers=self.bootstrap, group_id=self.group_id, auto_offset_reset="earliest",
                        enable_auto_commit=False, group_protocol="consumer", client_id=name,
                        rebalance_listener=self.ownership.listener(name))
        settings.update(self.options)
        settings.update(options)
        consumer = Consumer(self.topic, **settings)  # type: ignore[arg-type]
        await consumer.start()
        self.consumers[name], self.stop[name] = consumer, asyncio.Event()
        self.tasks[name] = asyncio.create_task(self._consume(consumer, self.stop[name]))
        return consumer

    async def _consume(self, consumer: Consumer, stop: asyncio.Event) -> None:
        while not stop.is_set():
            for batch in (await consumer.getmany(timeout_ms=100)).values():
                self.seen.extend((r.partition, r.offset) for r in batch)
            await consumer.commit()

    async def remove(self, name: str) -> None:
        self.stop[name].set()
        await asyncio.wait_for(self.tasks.pop(name), 30)
        await self.consumers.pop(name).close()

    async def close(self) -> None:
        for name in list(self.tasks):
            self.stop[name].set()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        for consumer in self.consumers.values():
            await consumer.close()

    def balanced(self, names: list[str]) -> Callable[[], bool]:
        """Every partition owned, by the named members only, evenly."""
        def check() -> bool:
            owned = [self.ownership.of(name) for name in names]
            sizes = [len(parts) for parts in owned]
            return sum(sizes) == PARTITIONS and max(sizes) - min(sizes) <= 1 and \
                all(self.consumers[n].group.state is MemberState.STABLE for n in names)  # type: ignore[union-attr]
        return check


async def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    async with Producer(bootstrap) as producer:
        for i in range(start, start + count):
            await producer.send(topic, b"%d" % i, partition=i % PARTITIONS)


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
