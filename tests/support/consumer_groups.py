"""A consumer group of our consumers in one event loop, for the group tests: each member consumes in its
own task and commits after every batch; rebalance hooks record who owns which partition when, and
any moment at which a partition was given to a member while another still owned it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from weir.client import Consumer, Producer, TopicPartition
from weir.client.consumer.group import CommitFailedError
from weir.client.consumer.membership import MemberState

PARTITIONS = 12


class Ownership:
    """Rebalance hooks for every member: who owns what now, what each was ever given or had revoked,
    and any moment at which a partition was given to a member while another still owned it."""

    def __init__(self) -> None:
        self.owner: dict[TopicPartition, str] = {}
        self.violations: list[str] = []
        self.revoked: dict[str, list[TopicPartition]] = {}
        self.since: dict[TopicPartition, float] = {}
        self.spans: list[tuple[int, str, float, float]] = []  # (partition, owner, from, until) once given up

    def listener(self, name: str) -> object:
        ownership = self

        class Listener:
            async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
                for tp in assigned:
                    if ownership.owner.get(tp, name) != name:
                        ownership.violations.append(f"{tp} given to {name} while {ownership.owner[tp]} owns it")
                    ownership.owner[tp] = name
                    ownership.since[tp] = time.monotonic()

            async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
                ownership.revoked.setdefault(name, []).extend(revoked)
                for tp in revoked:
                    if ownership.owner.pop(tp, None) is not None:
                        ownership.spans.append((tp.partition, name, ownership.since.pop(tp), time.monotonic()))

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
        self.refused_commits = 0

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
            try:
                await consumer.commit()
            except CommitFailedError:  # fenced meanwhile: the next getmany joins again
                self.refused_commits += 1

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
            return sum(sizes) == PARTITIONS and max(sizes) - min(sizes) <= 1 and all(
                getattr(self.consumers[n].group, "state", MemberState.STABLE) is MemberState.STABLE for n in names)
        return check


async def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    """Records ``start``..``start + count - 1``, record i to partition i % PARTITIONS."""
    async with Producer(bootstrap) as producer:
        for i in range(start, start + count):
            await producer.send(topic, b"%d" % i, partition=i % PARTITIONS)
