"""A rebalance may revoke a partition between the moment the fetcher decides to fetch it and the moment
the fetch task first runs (CI saw it with a Java consumer joining our group: the task read the revoked
partition's position, failed with KeyError before it could mark the broker free, and the consumer
never fetched from that broker again). The fetch goes out with the positions read at decision time,
its answer for the revoked partition is dropped, and the broker is free for the next fetch."""

import asyncio
from types import SimpleNamespace

from weir.client.cluster import Cluster
from weir.client.consumer.fetcher import READ_COMMITTED, Fetcher
from weir.client.types import TopicPartition

KEPT, REVOKED = TopicPartition("t", 0), TopicPartition("t", 1)


class OneBroker(Cluster):
    """Broker 0 leads everything and answers every Fetch with empty partitions at high watermark 0."""

    def __init__(self) -> None:
        super().__init__("localhost:1", retry_backoff_ms=1)
        self.fetches: list[dict[int, int]] = []
        self.fetched = asyncio.Event()

    def leader(self, topic, partition):
        return 0

    async def send(self, node_id, api_key, build, *, highest=None, timeout=None, transaction_version=1):
        request = build(0)
        asked = {p.partition: p.fetch_offset for t in request.topics for p in t.partitions}
        self.fetches.append(asked)
        self.fetched.set()
        return SimpleNamespace(error_code=0, responses=[SimpleNamespace(topic="t", partitions=[
            SimpleNamespace(partition_index=p, error_code=0, high_watermark=0, last_stable_offset=0,
                            log_start_offset=0, records=None, aborted_transactions=None) for p in asked])])


async def revoke_before_the_fetch_task_runs() -> tuple[list[dict[int, int]], Fetcher]:
    cluster = OneBroker()
    fetcher = Fetcher(cluster, isolation_level=READ_COMMITTED, auto_offset_reset="earliest", fetch_max_wait_ms=100,
                      fetch_min_bytes=1, fetch_max_bytes=1 << 20, max_partition_fetch_bytes=1 << 20,
                      retry_backoff_ms=1)
    fetcher.assign([KEPT, REVOKED])
    fetcher.seek(KEPT, 5)
    fetcher.seek(REVOKED, 7)
    loop = asyncio.get_running_loop()
    revoked_once = False

    def revoke_as_the_fetch_is_created(loop, coro, **kwargs):
        nonlocal revoked_once
        if coro.__qualname__ == "Fetcher._fetch" and not revoked_once:
            revoked_once = True
            fetcher.assign([KEPT])  # the rebalance lands between the decision and the task's first step
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(revoke_as_the_fetch_is_created)
    fetcher.start()
    try:
        async with asyncio.timeout(10):
            await cluster.fetched.wait()
            while len(cluster.fetches) < 2:  # the broker is free again: the kept partition is fetched anew
                cluster.fetched.clear()
                await cluster.fetched.wait()
    finally:
        loop.set_task_factory(None)
        await fetcher.close()
    return cluster.fetches, fetcher


def test_a_partition_revoked_before_the_fetch_task_starts_does_not_stall_the_broker():
    fetches, fetcher = asyncio.run(revoke_before_the_fetch_task_runs())
    assert fetches[0] == {0: 5, 1: 7}  # decided with both: the answer for the revoked one is dropped
    assert fetches[1] == {0: 5}
    assert set(fetcher.states) == {KEPT}
