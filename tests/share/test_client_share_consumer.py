"""Our asyncio ShareConsumer against the real broker: two members share a partition and get every
record once (implicit acknowledgement), a released record comes back with delivery count 2 and a
rejected one never, and what a member acknowledged before closing stays acknowledged."""

import asyncio
import uuid

import pytest

from weir.client.share import ShareConsumer
from tests.share.test_share_consumers import broker, make_topic, produce, set_group_configs  # noqa: F401

pytestmark = pytest.mark.asyncio


async def take(consumer, count, seconds=60):
    """Up to ``count`` records, or what came within ``seconds``."""
    records = []
    try:
        async with asyncio.timeout(seconds):
            async for record in consumer:
                records.append(record)
                if len(records) >= count:
                    break
    except TimeoutError:
        pass
    return records


async def test_two_members_get_every_record_once(broker):  # noqa: F811
    topic, group = make_topic(broker), f"client-share-{uuid.uuid4().hex[:8]}"
    set_group_configs(broker, {group: {"share.auto.offset.reset": "earliest"}})
    produce(broker, topic, 200)
    seen = []
    members = [ShareConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, max_wait_ms=200)
               for _ in range(2)]

    async def read(consumer):
        async for record in consumer:  # ends when the consumer is closed
            seen.append((record.offset, record.delivery_count))

    for consumer in members:
        await consumer.__aenter__()
    readers = [asyncio.create_task(read(consumer)) for consumer in members]
    try:
        async with asyncio.timeout(60):
            while len({offset for offset, _ in seen}) < 200:
                await asyncio.sleep(0.05)  # poll interval of a deadline-bounded wait
    finally:
        for consumer in members:
            await consumer.close()  # accepts what it was handed
        await asyncio.gather(*readers)
    assert sorted(offset for offset, _ in seen) == list(range(200))
    assert {count for _, count in seen} == {1}


async def test_release_comes_back_and_reject_does_not(broker):  # noqa: F811
    topic, group = make_topic(broker), f"client-share-{uuid.uuid4().hex[:8]}"
    set_group_configs(broker, {group: {"share.auto.offset.reset": "earliest"}})
    produce(broker, topic, 3)
    async with ShareConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                             acknowledgement_mode="explicit", max_wait_ms=200) as consumer:
        first = await take(consumer, 3)
        assert [(r.offset, r.delivery_count, r.value) for r in first] == [
            (0, 1, b"job-0"), (1, 1, b"job-1"), (2, 1, b"job-2")]
        for record, kind in zip(first, ("accept", "release", "reject"), strict=True):
            consumer.acknowledge(record, kind)
        await consumer.commit()
        again = await take(consumer, 1)
        assert [(r.offset, r.delivery_count) for r in again] == [(1, 2)]
        consumer.acknowledge(again[0])
        await consumer.commit()
    async with ShareConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, max_wait_ms=200) as late:
        assert await take(late, 1, seconds=3) == []  # nothing is left to deliver
