"""The client connection's socket side (client/connection.py) against in-process servers: answers
cut at every byte, a close or a malformed answer failing what is in flight, write flow control."""

import asyncio
import socket

import pytest

from weir.client.connection import Connection
from weir.client.errors import KafkaConnectionError
from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ServerConnection
from weir.protocol.messages import api_versions, metadata

VERSIONS = api_versions.RESPONSE(error_code=0, api_keys=[
    api_versions.ApiVersion(api_key=ApiKey.METADATA, min_version=0, max_version=12)], throttle_time_ms=0)


def answer(raw_request, body) -> bytes:
    """A framed response to ``raw_request`` (parsed by ServerConnection) at its version."""
    header = raw_request.header
    message = {ApiKey.API_VERSIONS: api_versions, ApiKey.METADATA: metadata}[header.api_key].RESPONSE
    return bytes(ServerConnection.encode_response(header, header.api_version, message, body))


async def serve(handler):
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def read_requests(reader, codec, count):
    requests = []
    while len(requests) < count:
        data = await reader.read(65536)
        if not data:
            break
        requests += codec.receive_data(data)
    return requests


async def test_responses_cut_at_every_byte_are_matched_in_order():
    topics = [metadata.Topic(error_code=0, name=f"topic-{n}", partitions=[]) for n in range(3)]

    async def trickle(reader, writer):
        codec = ServerConnection()
        requests = await read_requests(reader, codec, 2)
        frames = answer(requests[0], VERSIONS) + answer(requests[1], metadata.RESPONSE(
            brokers=[], cluster_id="c", controller_id=1, topics=topics))
        for offset in range(len(frames)):  # one byte a write: every response spans many reads
            writer.write(frames[offset:offset + 1])
            await writer.drain()
        await reader.read()  # until the client closes
        writer.close()

    server, port = await serve(trickle)
    connection = await Connection.open("127.0.0.1", port)
    try:
        first = connection.submit(ApiKey.API_VERSIONS, 3, api_versions.REQUEST(
            client_software_name="t", client_software_version="1"))
        second = connection.submit(ApiKey.METADATA, 9, metadata.REQUEST(topics=None))
        await connection.drain()
        assert (await asyncio.wait_for(first, 30)).api_keys[0].max_version == 12
        assert [t.name for t in (await asyncio.wait_for(second, 30)).topics] == ["topic-0", "topic-1", "topic-2"]
    finally:
        await connection.close()
        server.close()
    assert connection.closed


@pytest.mark.parametrize("ending", ["close", "malformed"])
async def test_the_end_of_a_connection_fails_every_request_in_flight(ending):
    async def end(reader, writer):
        await read_requests(reader, ServerConnection(), 2)
        if ending == "malformed":  # a frame whose correlation id was never sent
            writer.write(b"\x00\x00\x00\x05\x7f\xff\xff\xff\x00")
            await writer.drain()
            await reader.read()
        writer.close()

    server, port = await serve(end)
    connection = await Connection.open("127.0.0.1", port)
    try:
        pending = [connection.submit(ApiKey.METADATA, 9, metadata.REQUEST(topics=None)) for _ in range(2)]
        await connection.drain()
        for future in pending:
            with pytest.raises(KafkaConnectionError, match="correlation id" if ending == "malformed"
                               else "closed by the broker"):
                await asyncio.wait_for(future, 30)
        assert connection.closed
        with pytest.raises(KafkaConnectionError):
            connection.submit(ApiKey.METADATA, 9, metadata.REQUEST(topics=None))
    finally:
        await connection.close()
        server.close()


async def test_drain_waits_while_the_peer_reads_nothing():
    """A request larger than the socket buffers fills the transport's write buffer: drain waits
    until the peer has read enough of it."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    connection = await Connection.open("127.0.0.1", port)
    peer, _ = listener.accept()
    try:
        topics = [metadata.RequestTopic(name="t" * 200) for _ in range(100_000)]  # a ~20 MB request
        future = connection.submit(ApiKey.METADATA, 9, metadata.REQUEST(topics=topics))
        drained = asyncio.ensure_future(connection.drain())
        await asyncio.sleep(0)  # one turn of the loop: the drain has started waiting
        assert not drained.done()  # nothing was read: the write buffer is over its high-water mark
        loop = asyncio.get_running_loop()
        while not drained.done():  # the peer reads: the buffer empties, drain returns
            assert await loop.run_in_executor(None, peer.recv, 1 << 20), "the client closed the connection"
            await asyncio.sleep(0)  # a turn of the loop: the transport writes what the peer made room for
        future.cancel()
    finally:
        peer.close()
        listener.close()
        await connection.close()
