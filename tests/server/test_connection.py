"""The connection layer in-process: idle closing on a manual clock, flow control seen through Server's totals."""

import asyncio
import socket
import struct
from types import SimpleNamespace

import pytest

from weir.broker import handlers  # noqa: F401  (registers every API handler)
from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig
from weir.broker.dispatcher import Dispatcher
from weir.broker.features import FinalizedFeatures
from weir.broker.security.listeners import listener_specs
from weir.broker.server import Server
from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import ClientConnection
from weir.protocol.framing import FrameReader
from weir.protocol.messages import api_versions
from tests.support.waiting import wait_until_async


@pytest.fixture
async def serve(tmp_path):
    servers = []

    async def start(dispatcher=None, **overrides):
        config = BrokerConfig({name.replace("_", "."): str(value) for name, value in overrides.items()})
        context = SimpleNamespace(config=config, clock=ManualClock(), host="127.0.0.1", port=0,
                                  listeners=listener_specs(config, "127.0.0.1", 0), scram=None, delegation_tokens=None,
                                  features=FinalizedFeatures(tmp_path, node_id=0))  # ApiVersions v3 reads them
        server = Server(context, dispatcher or Dispatcher(context))
        await server.start()
        servers.append(server)
        return server
    yield start
    for server in servers:
        await server.stop()


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.codec = ClientConnection("test")

    @classmethod
    async def open(cls, port, **kwargs):
        return cls(*await asyncio.open_connection("127.0.0.1", port, **kwargs))

    def send_api_versions(self, count=1):
        self.writer.write(b"".join(self.codec.send_request(ApiKey.API_VERSIONS, 3, api_versions.REQUEST())
                                   for _ in range(count)))

    async def responses(self, count):
        got = []
        async with asyncio.timeout(30):
            while len(got) < count:
                data = await self.reader.read(1 << 16)
                assert data, "connection closed"
                got += self.codec.receive_data(data)
        return got

    async def round_trip(self):
        self.send_api_versions()
        [answer] = await self.responses(1)
        assert answer.error_code == 0


async def test_idle_connection_is_closed_after_connections_max_idle_ms_of_no_activity(serve):
    idle_ms = 5000
    server = await serve(connections_max_idle_ms=idle_ms)
    clock = server.context.clock
    client = await Client.open(server.port)
    await client.round_trip()
    clock.advance(idle_ms - 1)
    await client.round_trip()  # still open one ms short of the idle time; this request is activity
    clock.advance(idle_ms - 1)  # past the first deadline, but not idle that long since the request
    await client.round_trip()
    assert server.connection_count == 1 and server.counters.idle_closed == 0
    clock.advance(idle_ms)
    async with asyncio.timeout(10):
        assert await client.reader.read(1) == b""
    await wait_until_async(lambda: server.connection_count == 0, "the closed connection is forgotten")
    assert server.counters.idle_closed == 1


async def test_negative_connections_max_idle_ms_never_closes(serve):
    server = await serve(connections_max_idle_ms=-1)
    client = await Client.open(server.port)
    await client.round_trip()
    server.context.clock.advance(10 * 600_000)
    await client.round_trip()
    assert server.counters.idle_closed == 0


class BigAnswers:
    """A dispatcher whose every answer is ``size`` bytes: the connection layer is what is under test."""

    def __init__(self, size):
        self.size = size
        self.handled = 0

    async def dispatch(self, request, client_host, session=None):
        self.handled += 1
        body = struct.pack(">i", request.header.correlation_id) + bytes(self.size - 8)
        return struct.pack(">i", len(body)) + body


async def test_a_client_that_does_not_read_is_held_to_the_bound_then_gets_every_response_in_order(serve):
    bound, answer_size, pipelined = 1 << 20, 64 * 1024, 300  # ~19 MB of answers: more than the kernel buffers
    dispatcher = BigAnswers(answer_size)
    server = await serve(dispatcher, weir_connection_max_held_bytes=bound)
    sock = socket.socket()  # a small receive buffer: the kernel soon stops taking the answers
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    client = Client(*await asyncio.open_connection(sock=sock))
    client.send_api_versions(pipelined)
    largest_seen = 0

    def held(at_least):
        nonlocal largest_seen
        largest_seen = max(largest_seen, server.bytes_held)
        return largest_seen >= at_least
    await wait_until_async(lambda: held(bound), "unsent answers pile up to the bound")
    for _ in range(50):  # and no further while the client reads nothing
        await asyncio.sleep(0.005)
        held(0)
    assert largest_seen <= bound + answer_size + 4096  # + one answer + the (small) queued requests
    assert dispatcher.handled < pipelined, "requests wait while the connection is over its bound"
    assert server.counters.flow_control_pauses > 0 and server.connection_count == 1
    frames = FrameReader(answer_size)
    got = []
    async with asyncio.timeout(60):
        while len(got) < pipelined:
            data = await client.reader.read(1 << 20)
            assert data, "connection closed"
            got += [struct.unpack_from(">i", frame)[0] for frame in frames.feed(data)]
    assert got == list(range(pipelined)), "every answer whole and in request order"
    await wait_until_async(lambda: server.bytes_held == 0, "nothing held once the client has read everything")
