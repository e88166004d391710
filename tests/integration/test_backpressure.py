"""A client that pipelines Fetches and never reads cannot make the broker hold its responses without bound."""

import asyncio
import os
import socket
import time
from pathlib import Path

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.errors import Errors
from weir.protocol.messages import api_versions, fetch, metadata
from weir.protocol.records import Record, encode_batch, iter_headers

from .test_bad_input import produce_request

BATCHES = 6
BATCH_VALUE = 900_000  # one ~0.9 MB record per batch, under message.max.bytes
PIPELINED = 300


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def whole_partition_fetch(topic, max_bytes):
    return fetch.REQUEST(max_wait_ms=0, min_bytes=1, max_bytes=max_bytes, topics=[
        fetch.FetchTopic(topic=topic, partitions=[
            fetch.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=max_bytes)])])


async def test_unread_pipelined_fetches_are_held_to_the_bound_and_all_arrive_in_order(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        await conn.request(ApiKey.METADATA, 9, metadata.REQUEST(topics=[metadata.RequestTopic(name=topic_name)]))
        for _ in range(BATCHES):
            batch = encode_batch([Record(os.urandom(BATCH_VALUE))])
            answer = await conn.request(ApiKey.PRODUCE, 9, produce_request(topic_name, batch))
            assert answer.responses[0].partition_responses[0].error_code == Errors.NONE
        stored = (await conn.request(ApiKey.FETCH, 12, whole_partition_fetch(topic_name, 16 << 20))
                  ).responses[0].partitions[0].records
        assert len(list(iter_headers(stored))) == BATCHES
        response_size = len(stored)  # ~5.4 MB: 300 of them would be ~1.6 GB held

        baseline = rss_bytes(broker.process.pid)
        greedy = socket.create_connection(("127.0.0.1", broker.port))
        greedy.setblocking(False)
        codec = ClientConnection("greedy")
        greedy.sendall(b"".join(codec.send_request(ApiKey.FETCH, 12, whole_partition_fetch(topic_name, 16 << 20))
                                for _ in range(PIPELINED)))

        # While the greedy client reads nothing, another client is served, and the broker's memory
        # stays near what one connection may hold (16 MiB by default) plus the response in hand.
        peak = baseline
        window_end = time.monotonic() + 3.0
        while time.monotonic() < window_end:
            answer = await conn.request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST())
            assert answer.error_code == Errors.NONE
            small = await conn.request(ApiKey.FETCH, 12, whole_partition_fetch(topic_name, 1000))
            assert small.responses[0].partitions[0].error_code == Errors.NONE
            peak = max(peak, rss_bytes(broker.process.pid))
            await asyncio.sleep(0.02)  # sampling interval of the memory watch, not a wait for an event
        assert peak - baseline < 120 << 20, (
            f"broker RSS grew by {(peak - baseline) >> 20} MiB for one client that does not read; "
            f"{PIPELINED} responses would be {(PIPELINED * response_size) >> 20} MiB")

        # Reading at last: every response arrives whole, in request order (the codec checks the
        # correlation ids), each carrying the full partition.
        loop = asyncio.get_running_loop()
        received = 0
        async with asyncio.timeout(180):
            while received < PIPELINED:
                data = await loop.sock_recv(greedy, 1 << 20)
                assert data, f"broker closed the connection after {received} responses"
                for response in codec.receive_data(data):
                    partition = response.responses[0].partitions[0]
                    assert partition.error_code == Errors.NONE
                    assert bytes(partition.records) == bytes(stored), f"response {received} differs"
                    received += 1
        greedy.close()
    finally:
        await conn.close()
