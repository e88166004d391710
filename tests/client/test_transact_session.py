"""GroupTransactSession against Weir and Apache Kafka: a rebalance during a transaction aborts it,
and a group of sessions still turns every input into exactly one committed output."""

from __future__ import annotations

import asyncio

from weir.client import GroupTransactSession, Producer
from tests.client.txn_helpers import new_topic, read_committed, until

INPUTS = 40


async def process(session: GroupTransactSession, output: str, stop: asyncio.Event, results: list[bool]) -> None:
    while not stop.is_set():
        for batch in (await session.getmany(timeout_ms=100)).values():
            for record in batch:
                await session.send(output, b"out-" + record.value, partition=0)
        if session.in_transaction:
            results.append(await session.end())


async def test_a_rebalance_during_the_transaction_aborts_it_and_every_input_is_output_once(any_broker, topic_name):
    source = await new_topic(any_broker.bootstrap, f"{topic_name}-in", 2)
    output = await new_topic(any_broker.bootstrap, f"{topic_name}-out", 1)
    async with Producer(any_broker.bootstrap) as producer:
        for i in range(INPUTS):
            await producer.send(source, str(i).encode(), partition=i % 2)
    common = dict(bootstrap_servers=any_broker.bootstrap, group_id=f"{topic_name}-g",
                  consumer_options=dict(partition_assignment_strategy=["range"], heartbeat_interval_ms=100,
                                        session_timeout_ms=10000, max_poll_interval_ms=20000))
    first = GroupTransactSession(source, transactional_id=f"{topic_name}-a", **common)
    second = GroupTransactSession(source, transactional_id=f"{topic_name}-b", **common)
    await first.start()
    stop, tasks = asyncio.Event(), []
    try:
        got = {}
        while not got:
            got = await first.getmany(timeout_ms=200, max_records=5)
        assert first.in_transaction
        for batch in got.values():
            for record in batch:
                await (await first.send(output, b"doomed-" + record.value, partition=0))  # written, not committed

        await second.start()
        second_results: list[bool] = []
        tasks.append(asyncio.create_task(process(second, output, stop, second_results)))
        await until(first.consumer.group.rejoin_needed.is_set, 30, "the first member to hear of the rebalance")
        await asyncio.wait_for(first.getmany(timeout_ms=0), 60)  # rejoins: its partitions are revoked
        assert await first.end() is False  # aborted, not committed

        first_results: list[bool] = []
        tasks.append(asyncio.create_task(process(first, output, stop, first_results)))

        async def outputs():
            return await read_committed(any_broker.bootstrap, output)
        deadline = asyncio.get_running_loop().time() + 90
        while len(done := await outputs()) < INPUTS:
            assert asyncio.get_running_loop().time() < deadline, f"only {len(done)} outputs committed"
            await asyncio.sleep(0.3)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        assert any(first_results) and any(second_results)  # both members committed work
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await second.close()
        await first.close()
    values = await read_committed(any_broker.bootstrap, output)
    assert sorted(values) == sorted(b"out-%d" % i for i in range(INPUTS))  # each once, nothing doomed
