"""Dialling a broker that accepts the connection but never answers (a frozen process keeps
accepting in the kernel's backlog): the half-open connection is closed, not leaked."""

import asyncio

import pytest

from weir.client.cluster import Cluster
from weir.client.errors import KafkaConnectionError


async def test_a_dial_that_times_out_in_the_handshake_closes_its_socket():
    closed = asyncio.Event()

    async def silent(reader, writer):
        while await reader.read(1024):  # swallows ApiVersions, never answers
            pass
        closed.set()  # EOF: the client closed its side
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    cluster = Cluster(f"127.0.0.1:{port}", client_id="dial-test", request_timeout_ms=300, retry_backoff_ms=10)
    try:
        with pytest.raises(KafkaConnectionError):
            await cluster.any_connection()
        await asyncio.wait_for(closed.wait(), 10)
    finally:
        await cluster.close()
        server.close()
        await server.wait_closed()
