"""shouting_service.py under faults a real Kafka gives now and then, made on purpose with the
broker's fault injection (``weir_broker.faults``, ``pause()``): a storm of retriable errors and a
paused broker leave every line shouted exactly once; a fatal error stops the service with that
error, having shouted nothing."""

from __future__ import annotations

import asyncio

import pytest

from weir.client import Producer
from weir.client.errors import TransactionalIdAuthorizationFailedError

import shouting_service
from test_shouting_service import PARTITIONS, assert_exactly_once, line, read_shouts

LINES = 300
PAUSE_S = 3.0


@pytest.fixture
def faults(weir_broker):
    """The session broker's faults, disarmed (and the broker resumed) after the test."""
    yield weir_broker.faults
    weir_broker.resume()
    weir_broker.faults.clear()


async def write_lines(bootstrap: str, topic: str, first: int, count: int) -> None:
    async with Producer(bootstrap) as producer:
        for number in range(first, first + count):
            await producer.send(topic, line(number), b"%d" % number)
        await producer.flush()


def start_service(bootstrap: str, source: str, sink: str, stop: asyncio.Event) -> asyncio.Task:
    return asyncio.create_task(shouting_service.run(
        bootstrap, source, sink, group=f"{sink}-group", transactional_id=f"{sink}-service", stop=stop))


async def test_a_storm_of_retriable_errors_loses_and_repeats_nothing(weir_broker, weir_topic, faults):
    bootstrap = weir_broker.bootstrap_servers
    source, sink = weir_topic(partitions=PARTITIONS), weir_topic(partitions=PARTITIONS)
    await write_lines(bootstrap, source, 0, LINES)
    faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", times=10, topic=sink)
    faults.error("TxnOffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS", times=3)
    faults.error("EndTxn", "CONCURRENT_TRANSACTIONS", times=3)
    faults.error("Fetch", "NOT_LEADER_OR_FOLLOWER", times=5, topic=source)
    stop = asyncio.Event()
    service = start_service(bootstrap, source, sink, stop)
    await asyncio.to_thread(read_shouts, bootstrap, sink, LINES)
    stop.set()
    await service
    assert_exactly_once(await asyncio.to_thread(read_shouts, bootstrap, sink), LINES)
    assert faults.fired() == {"Produce": 10, "TxnOffsetCommit": 3, "EndTxn": 3, "Fetch": 5}


async def test_a_fatal_error_stops_the_service_with_it(weir_broker, weir_topic, faults):
    bootstrap = weir_broker.bootstrap_servers
    source, sink = weir_topic(partitions=PARTITIONS), weir_topic(partitions=PARTITIONS)
    await write_lines(bootstrap, source, 0, 10)
    faults.error("InitProducerId", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
    with pytest.raises(TransactionalIdAuthorizationFailedError):
        await asyncio.wait_for(start_service(bootstrap, source, sink, asyncio.Event()), 60)
    assert faults.fired() == {"InitProducerId": 1}
    assert await asyncio.to_thread(read_shouts, bootstrap, sink) == []


async def test_a_paused_broker_holds_the_service_back_and_loses_nothing(weir_broker, weir_topic, faults):
    bootstrap = weir_broker.bootstrap_servers
    source, sink = weir_topic(partitions=PARTITIONS), weir_topic(partitions=PARTITIONS)
    await write_lines(bootstrap, source, 0, LINES)
    stop = asyncio.Event()
    service = start_service(bootstrap, source, sink, stop)
    await asyncio.to_thread(read_shouts, bootstrap, sink, 1)  # it is serving
    weir_broker.pause()
    await asyncio.sleep(PAUSE_S)  # the fault itself: the broker answers nothing for this long
    assert not service.done()  # held back, not failed
    weir_broker.resume()
    await asyncio.to_thread(read_shouts, bootstrap, sink, LINES)
    stop.set()
    await service
    assert_exactly_once(await asyncio.to_thread(read_shouts, bootstrap, sink), LINES)
