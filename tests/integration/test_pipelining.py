"""Requests pipelined on one connection are answered in order; acks=0 gets no response at all."""

import asyncio

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import api_versions, fetch, metadata
from weir.protocol.records import Record, decode_batches, encode_batch

from .test_bad_input import produce_request


def fetch_request(topic, offset, max_wait_ms):
    return fetch.REQUEST(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, topics=[
        fetch.FetchTopic(topic=topic, partitions=[
            fetch.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])


async def test_pipelined_requests_are_answered_in_order(broker, topic_name):
    conn = await Connection.open("127.0.0.1", broker.port)
    try:
        await conn.request(ApiKey.METADATA, 9, metadata.REQUEST(topics=[metadata.RequestTopic(name=topic_name)]))
        # A long-polling fetch first, then a quick request behind it on the same connection.
        slow = asyncio.ensure_future(conn.request(ApiKey.FETCH, 12, fetch_request(topic_name, 0, 400)))
        quick = asyncio.ensure_future(conn.request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST()))
        done, _ = await asyncio.wait({slow, quick}, return_when=asyncio.FIRST_COMPLETED)
        assert slow in done, "the later request must not be answered before the earlier one"
        await quick
    finally:
        await conn.close()


async def test_long_poll_wakes_on_append_and_acks_0_has_no_response(broker, topic_name):
    reader = await Connection.open("127.0.0.1", broker.port)
    writer = await Connection.open("127.0.0.1", broker.port)
    try:
        await reader.request(ApiKey.METADATA, 9, metadata.REQUEST(topics=[metadata.RequestTopic(name=topic_name)]))
        waiting = asyncio.ensure_future(reader.request(ApiKey.FETCH, 12, fetch_request(topic_name, 0, 30_000)))
        await asyncio.sleep(0)
        await writer.send(ApiKey.PRODUCE, 9, produce_request(topic_name, encode_batch([Record(b"fire")]), acks=0))
        async with asyncio.timeout(10):  # far below the 30 s max wait: the append woke the fetch
            response = await waiting
        records = response.responses[0].partitions[0].records
        assert [r.value for _h, batch in decode_batches(records) for r in batch] == [b"fire"]
        # acks=0 produced nothing to read on the writer's connection: the next answer is this one's.
        answer = await writer.request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST())
        assert answer.error_code == 0
    finally:
        await reader.close()
        await writer.close()
