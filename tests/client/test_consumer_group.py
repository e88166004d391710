"""Our consumers in one group against the real broker: cooperative handover, commits, static members."""

import asyncio


from weir.client import Consumer, Producer, TopicPartition
from tests.support.topics import create_topic

PARTITIONS = 6


class Ownership:
    """A rebalance listener per member that checks no partition is ever owned by two members."""

    def __init__(self):
        self.owner: dict[TopicPartition, str] = {}
        self.violations: list[str] = []

    def listener(self, name):
        ownership = self

        class Listener:
            async def on_partitions_assigned(self, assigned):
                for tp in assigned:
                    if ownership.owner.get(tp, name) != name:
                        ownership.violations.append(f"{tp} given to {name} while {ownership.owner[tp]} owns it")
                    ownership.owner[tp] = name

            async def on_partitions_revoked(self, revoked):
                for tp in revoked:
                    ownership.owner.pop(tp, None)

            on_partitions_lost = on_partitions_revoked
        return Listener()

    def of(self, name):
        return {tp for tp, owner in self.owner.items() if owner == name}


async def run_member(consumer, seen, stop):
    while not stop.is_set():
        for batch in (await consumer.getmany(timeout_ms=200)).values():
            seen.extend((r.partition, r.offset) for r in batch)
        await consumer.commit()


async def until(condition, timeout=30.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_cooperative_group_of_three_hands_partitions_over_without_overlap(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, PARTITIONS)
    ownership = Ownership()
    consumers, seen, stop, tasks = {}, {}, {}, {}
    common = dict(bootstrap_servers=any_broker.bootstrap, group_id=f"{topic_name}-g", auto_offset_reset="earliest",
                  enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300,
                  partition_assignment_strategy=["cooperative-sticky"])

    async def start(name):
        consumer = Consumer(topic_name, rebalance_listener=ownership.listener(name), **common)
        await consumer.start()
        consumers[name], seen[name], stop[name] = consumer, [], asyncio.Event()
        tasks[name] = asyncio.create_task(run_member(consumer, seen[name], stop[name]))

    try:
        for name in ("a", "b", "c"):
            await start(name)
        await until(lambda: all(len(ownership.of(n)) == 2 for n in "abc"))
        async with Producer(any_broker.bootstrap) as producer:
            for i in range(600):
                await producer.send(topic_name, str(i).encode(), partition=i % PARTITIONS)
            await producer.flush()
        await until(lambda: sum(len(s) for s in seen.values()) >= 600)
        kept = {n: ownership.of(n) for n in "ab"}
        stop["c"].set()
        await tasks["c"]
        await consumers["c"].close()
        await until(lambda: len(ownership.of("a")) == 3 and len(ownership.of("b")) == 3)
        assert kept["a"] <= ownership.of("a") and kept["b"] <= ownership.of("b")  # sticky: nothing moved but c's
        async with Producer(any_broker.bootstrap) as producer:
            for i in range(600, 1200):
                await producer.send(topic_name, str(i).encode(), partition=i % PARTITIONS)
            await producer.flush()
        await until(lambda: sum(len(s) for s in seen.values()) >= 1200)
    finally:
        for name, consumer in consumers.items():
            stop[name].set()
            await tasks[name]
            await consumer.close()
    assert not ownership.violations
    everything = [place for s in seen.values() for place in s]
    assert len(everything) == len(set(everything)) == 1200  # every record read once across the group


async def test_committed_offsets_resume_and_static_member_keeps_its_partitions(any_broker, topic_name):
    await asyncio.to_thread(create_topic, any_broker.bootstrap, topic_name, 2)
    settings = dict(bootstrap_servers=any_broker.bootstrap, group_id=f"{topic_name}-g", auto_offset_reset="earliest",
                    group_instance_id="static-1", session_timeout_ms=6000, heartbeat_interval_ms=300)
    async with Producer(any_broker.bootstrap) as producer:
        for i in range(100):
            await producer.send(topic_name, str(i).encode(), partition=i % 2)
    first = Consumer(topic_name, **settings)
    await first.start()
    got = []
    while len(got) < 60:
        for batch in (await first.getmany(timeout_ms=500, max_records=10)).values():
            got.extend(int(r.value) for r in batch)
    await first.commit()
    generation = first.group.generation_id
    await first.close()  # a static member sends no LeaveGroup
    second = Consumer(topic_name, **settings)
    await second.start()
    rest = []
    try:
        while len(got) + len(rest) < 100:
            for batch in (await second.getmany(timeout_ms=500)).values():
                rest.extend(int(r.value) for r in batch)
        assert second.group.generation_id == generation  # rejoined in place: no rebalance
    finally:
        await second.close()
    assert sorted(got + rest) == list(range(100))
