"""The many-client scenarios of bench/scale.py, each in one asyncio loop of this process.

- ``connections``: ``count`` TCP connections held open at once, each answered one ApiVersions
  (idle: the broker's RSS per connection), then each sending ``requests`` requests in turn,
  ApiVersions and a one-topic Metadata alternately, all connections at once (active: latency
  of every request, requests/s). Raw frames through our protocol codec: no client library's
  batching or connection pooling between the measurement and the broker.
- ``group``: ``members`` aiokafka consumers (classic protocol, round-robin assignor, heartbeats
  every 0.5 s) subscribe at once: seconds until every partition is owned by exactly one member;
  then one member more joins: seconds until the group is whole again.
- ``transactional_producers``: ``count`` transactional producers of our client: seconds until
  all have initialised (InitProducerId through the coordinator), then each commits
  ``transactions`` one-record transactions, all at once: commits/s.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.messages import api_versions, metadata

from bench.throughput import rss_mib

API_VERSIONS_V, METADATA_V = 3, 12  # both answered by Weir, Tansu and Kafka 4.x
POLL_S = 0.05  # how often a group's assignments are looked at (a deadline-bounded poll)


@dataclass
class _Link:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    codec: ClientConnection = field(default_factory=lambda: ClientConnection("weir-bench-scale"))

    async def call(self, api_key: int, version: int, body: object) -> float:
        """Send one request, read its answer whole and decode it; seconds from send to the last byte."""
        frame = self.codec.send_request(api_key, version, body)
        began = time.monotonic()
        self.writer.write(frame)
        size = await self.reader.readexactly(4)
        payload = await self.reader.readexactly(int.from_bytes(size, "big"))
        elapsed = time.monotonic() - began
        answers = self.codec.receive_data(size + payload)
        if len(answers) != 1 or getattr(answers[0], "error_code", None):
            raise RuntimeError(f"unexpected answer to API {api_key}: {answers!r:.200}")
        return elapsed


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def connections(port: int, pid: int, count: int, requests: int, topic: str,
                      deadline: float) -> dict[str, float | str]:
    async def open_link() -> _Link:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        link = _Link(reader, writer)
        await link.call(ApiKey.API_VERSIONS, API_VERSIONS_V, api_versions.REQUEST(
            client_software_name="weir-bench", client_software_version="1"))
        return link

    rss_before = rss_mib(pid)
    links: list[_Link] = []
    try:
        # opened in waves so that the listen backlog (Kafka's and Tansu's default is small) is not the test
        for first in range(0, count, 100):
            links += await asyncio.wait_for(
                asyncio.gather(*(open_link() for _ in range(first, min(count, first + 100)))), deadline)
        idle_kib = (rss_mib(pid) - rss_before) * 1024 / count
        topics = [metadata.RequestTopic(name=topic)]

        async def talk(link: _Link) -> list[float]:
            latencies = []
            for number in range(requests):
                if number % 2:
                    latencies.append(await link.call(ApiKey.METADATA, METADATA_V, metadata.REQUEST(
                        topics=topics, allow_auto_topic_creation=False)))
                else:
                    latencies.append(await link.call(ApiKey.API_VERSIONS, API_VERSIONS_V, api_versions.REQUEST(
                        client_software_name="weir-bench", client_software_version="1")))
            return latencies

        began = time.monotonic()
        answered = await asyncio.wait_for(asyncio.gather(*(talk(link) for link in links)), deadline)
        elapsed = time.monotonic() - began
    finally:
        for link in links:
            link.writer.close()
    ordered = sorted(latency for per_link in answered for latency in per_link)
    if len(ordered) != count * requests:
        raise RuntimeError(f"{len(ordered)} answers of {count * requests}")
    return {"connections: idle RSS KiB/connection": idle_kib,
            "connections: request p50 ms": _quantile(ordered, 0.5) * 1000,
            "connections: request p99 ms": _quantile(ordered, 0.99) * 1000,
            "connections: request max ms": ordered[-1] * 1000,
            "connections: requests/s": len(ordered) / elapsed}


async def group(bootstrap: str, topic: str, partitions: int, members: int, deadline: float) -> dict[str, float | str]:
    import logging

    from aiokafka import AIOKafkaConsumer
    logging.getLogger("aiokafka").setLevel(logging.ERROR)  # members waiting out a rebalance warn at every heartbeat

    def member() -> AIOKafkaConsumer:
        return AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="scale-group", enable_auto_commit=False,
                                heartbeat_interval_ms=500, session_timeout_ms=45000, auto_offset_reset="earliest")

    async def whole(consumers: list[AIOKafkaConsumer]) -> float:
        """Seconds until the partitions are shared among all ``consumers`` completely and disjointly."""
        began = time.monotonic()
        while time.monotonic() - began < deadline:
            owned = [consumer.assignment() for consumer in consumers]
            if sum(map(len, owned)) == partitions and len(set().union(*owned)) == partitions \
                    and all(owned[: min(len(owned), partitions)]):
                return time.monotonic() - began
            await asyncio.sleep(POLL_S)
        raise TimeoutError(f"{len(consumers)} members did not share {partitions} partitions in {deadline:g} s")

    consumers = [member() for _ in range(members)]
    try:
        began = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(consumer.start() for consumer in consumers)), deadline)
        await whole(consumers)
        join_s = time.monotonic() - began
        consumers.append(member())
        began = time.monotonic()
        await consumers[-1].start()
        await whole(consumers)
        one_more_s = time.monotonic() - began
    finally:
        await asyncio.gather(*(consumer.stop() for consumer in consumers), return_exceptions=True)
    return {"group: all members joined s": join_s, "group: one member more s": one_more_s}


async def transactional_producers(bootstrap: str, topic: str, count: int, transactions: int,
                                  deadline: float) -> dict[str, float | str]:
    from weir.client import Producer
    producers = [Producer(bootstrap, transactional_id=f"scale-txn-{number}", linger_ms=0) for number in range(count)]

    async def commit(producer: Producer) -> None:
        for number in range(transactions):
            async with producer.transaction():
                await producer.send(topic, b"%d" % number)

    try:
        began = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(producer.start() for producer in producers)), deadline)
        init_s = time.monotonic() - began
        began = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(commit(producer) for producer in producers)), deadline)
        commit_s = time.monotonic() - began
    finally:
        await asyncio.gather(*(producer.close() for producer in producers), return_exceptions=True)
    return {"txn producers: init/s": count / init_s, "txn producers: commits/s": count * transactions / commit_s}
