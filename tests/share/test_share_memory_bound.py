"""Memory stays bounded under a greedy share group: 200 members (our ShareConsumer, explicit
acknowledgement) fetch from a partition of 10,000 records and acknowledge nothing. The in-flight
window of the share-partition is bounded by ``group.share.partition.max.record.locks`` (2,000 by
default; whole batches are acquired, so the window ends with the batch that reaches it): the
first 2,000 records (to that batch's end) are handed out, once each, and the 200 members then
wait in long polls; meanwhile another share group on the same partition reads and accepts all
10,000 records, and the broker's resident memory grows by a bounded amount."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from weir.client.share import ShareConsumer
from tests.broker_process import BrokerProcess
from confluent_kafka import Producer

from tests.share.test_share_consumers import make_topic, set_group_configs

pytestmark = pytest.mark.asyncio

MAX_LOCKS = 2000  # group.share.partition.max.record.locks, Kafka's default
HOLDERS = 200
RECORDS = 10_000
RSS_GROWTH_LIMIT = 150 * 1024 * 1024  # 200 connections and sessions, 2,000 locks: far below this
BATCH = 100  # records per produced batch: a fetch takes whole batches, so the window may end one batch past the bound


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("share-memory")).start()
    yield process
    process.stop()


class CountedShareConsumer(ShareConsumer):
    """Counts its finished ShareFetch rounds, so the test knows every member asked again."""
    fetches = 0

    async def _fetch(self) -> None:
        await super()._fetch()
        self.fetches += 1


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def test_hundreds_of_greedy_members_hold_at_most_the_record_locks(broker):
    topic, run = make_topic(broker), uuid.uuid4().hex[:8]
    greedy, polite = f"share-greedy-{run}", f"share-polite-{run}"
    set_group_configs(broker, {greedy: {"share.auto.offset.reset": "earliest",
                                        "share.record.lock.duration.ms": "60000"},  # held all along the test
                               polite: {"share.auto.offset.reset": "earliest"}})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "batch.num.messages": BATCH})
    for i in range(RECORDS):
        producer.produce(topic, value=b"job-%d" % i)
    assert producer.flush(30) == 0
    baseline = rss_bytes(broker.pid)
    held: list[int] = []
    holders = [CountedShareConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=greedy, client_id=f"holder-{n}",
                             acknowledgement_mode="explicit", max_wait_ms=2000) for n in range(HOLDERS)]

    async def hold(consumer: ShareConsumer) -> None:
        async for record in consumer:  # never acknowledged; ends when the consumer closes
            held.append(record.offset)

    for consumer in holders:
        await consumer.__aenter__()
    holding = [asyncio.create_task(hold(consumer)) for consumer in holders]
    try:
        async with asyncio.timeout(120):
            while len(held) < MAX_LOCKS:
                await asyncio.sleep(0.1)  # poll interval of a deadline-bounded wait
        # The other group is served in full while the 200 keep fetching.
        accepted = 0
        async with ShareConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=polite) as reader:
            async with asyncio.timeout(180):
                async for _record in reader:  # implicit: accepted by the next fetch
                    accepted += 1
                    if accepted == RECORDS:
                        break
        assert accepted == RECORDS
        # and every greedy member has since asked twice more (long polls that found the window full)
        asked = [consumer.fetches for consumer in holders]
        async with asyncio.timeout(120):
            while any(consumer.fetches < before + 2 for consumer, before in zip(holders, asked, strict=True)):
                await asyncio.sleep(0.1)  # poll interval of a deadline-bounded wait
        # the window's records, each handed out once, and no more than the bound (to its batch's end)
        assert sorted(held) == list(range(len(held))) and MAX_LOCKS <= len(held) < MAX_LOCKS + BATCH
        assert sum(1 for consumer in holders if consumer.assignment) == HOLDERS  # every member was assigned
        assert rss_bytes(broker.pid) - baseline < RSS_GROWTH_LIMIT
    finally:
        await asyncio.gather(*(consumer.close() for consumer in holders))
        await asyncio.gather(*holding, return_exceptions=True)
