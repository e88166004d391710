"""Responses with file regions through the connection layer in-process: sent with sendfile, or
copied where sendfile is refused; in request order among plain responses; pins released."""

import asyncio
import os

import pytest

from weir.broker import region_sender
from weir.broker.connection import KafkaConnection
from weir.protocol.connection import ServerConnection
from weir.protocol.messages import api_versions
from weir.protocol.response_pieces import FileRegion, ResponsePieces

from .test_connection import Client, serve  # noqa: F401  (fixture)


class FileSlice(FileRegion):
    """A region of a plain file that counts its pins."""
    __slots__ = ("fd", "pins")

    def __init__(self, fd, position, length):
        super().__init__(position, length)
        self.fd, self.pins = fd, 0

    def read(self):
        return os.pread(self.fd, self.length, self.position)

    def pin(self):
        self.pins += 1
        return self.fd

    def unpin(self):
        self.pins -= 1


class RegionDispatcher:
    """Answers each request with [correlation id] "head" [region] "|" [region] "|" (regions of one
    file), and every third one with a plain ApiVersions answer."""

    def __init__(self, fd, size):
        self.fd, self.size, self.regions, self.count = fd, size, [], 0

    async def dispatch(self, request, client_host="", session=None):
        self.count += 1
        if self.count % 3 == 0:  # every third answer is a plain one, between region answers
            return ServerConnection.encode_response(request.header, 3, api_versions.RESPONSE,
                                                    api_versions.RESPONSE(error_code=0))
        out = ResponsePieces(4)
        out += request.header.correlation_id.to_bytes(4, "big") + b"head"
        for start in (self.count * 1000 % self.size, 7):
            region = FileSlice(self.fd, start, min(3 << 20, self.size - start))
            self.regions.append(region)
            out.add_region(region)
            out += b"|"
        out[0:4] = (out.frame_size - 4).to_bytes(4, "big")
        return out


async def read_frames(reader, count):
    frames = []
    async with asyncio.timeout(60):
        while len(frames) < count:
            size = int.from_bytes(await reader.readexactly(4), "big")
            frames.append(await reader.readexactly(size))
    return frames


@pytest.mark.parametrize("sendfile", [True, False], ids=["sendfile", "copied"])
async def test_region_responses_arrive_whole_and_in_order(serve, tmp_path, monkeypatch, sendfile):  # noqa: F811
    if not sendfile:
        def refuse(*_args):
            raise OSError(22, "Invalid argument")  # what Linux answers for a socket it cannot sendfile to
        monkeypatch.setattr(region_sender.os, "sendfile", refuse)
    data = os.urandom(8 << 20)
    path = tmp_path / "segment"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        dispatcher = RegionDispatcher(fd, len(data))
        server = await serve(dispatcher)
        client = await Client.open(server.port)
        count = 12
        client.send_api_versions(count)  # pipelined: the answers must come back in this order
        frames = await read_frames(client.reader, count)
        for number, frame in enumerate(frames, 1):
            assert int.from_bytes(frame[:4], "big") == number - 1, "answers in request order"
            if number % 3 == 0:
                continue
            start = number * 1000 % len(data)
            first = data[start:start + (3 << 20)]
            second = data[7:7 + (3 << 20)]
            assert frame[4:] == b"head" + first + b"|" + second + b"|"
        assert all(region.pins == 0 for region in dispatcher.regions), "every pin released"
    finally:
        os.close(fd)


class OneLongRegion:
    """Answers every request with one region of ``size`` bytes of the file."""

    def __init__(self, fd, size):
        self.fd, self.size = fd, size

    async def dispatch(self, request, client_host="", session=None):
        out = ResponsePieces(4)
        out += request.header.correlation_id.to_bytes(4, "big")
        out.add_region(FileSlice(self.fd, 0, self.size))
        out[0:4] = (out.frame_size - 4).to_bytes(4, "big")
        return out


async def test_a_client_reading_a_long_region_is_active_for_the_idle_check(serve, tmp_path):  # noqa: F811
    """A region goes out through sendfile, past the transport: a client that keeps reading it for
    longer than connections.max.idle.ms is not idle (Kafka counts every completed send as activity)."""
    idle_ms, size, step = 5000, 96 << 20, 24 << 20
    path = tmp_path / "segment"
    with open(path, "wb") as f:
        f.truncate(size)  # a sparse file: sendfile reads its zeros like any page
    fd = os.open(path, os.O_RDONLY)
    try:
        server = await serve(OneLongRegion(fd, size), connections_max_idle_ms=idle_ms)
        clock = server.context.clock
        client = await Client.open(server.port)
        client.send_api_versions(1)
        async with asyncio.timeout(60):
            frame_size = int.from_bytes(await client.reader.readexactly(4), "big")
            assert frame_size == 4 + size
            received = 4
            for _ in range(3):  # each step reads more than the socket buffers hold, so sendfile ran
                await client.reader.readexactly(step)
                received += step
                clock.advance(idle_ms - 1000)  # 12 s in all since the request: idle, were sendfile not counted
            await client.reader.readexactly(frame_size - received)
        assert server.counters.idle_closed == 0
    finally:
        os.close(fd)


class SmallRegions:
    """Answers each request with [correlation id] "head" [region] "|" [region] "|", regions of a
    few hundred bytes (a fetch of a consumer that keeps up)."""

    def __init__(self, fd, length):
        self.fd, self.length, self.regions = fd, length, []

    async def dispatch(self, request, client_host="", session=None):
        out = ResponsePieces(4)
        out += request.header.correlation_id.to_bytes(4, "big") + b"head"
        for start in (request.header.correlation_id * 10, 3):
            region = FileSlice(self.fd, start, self.length)
            self.regions.append(region)
            out.add_region(region)
            out += b"|"
        out[0:4] = (out.frame_size - 4).to_bytes(4, "big")
        return out


async def test_a_response_with_little_file_data_is_read_and_sent_whole(serve, tmp_path, monkeypatch):  # noqa: F811
    """Up to COPY_REGIONS_UP_TO bytes of regions go out in one write, not header, sendfile, tail."""
    sendfile_calls = []
    real_sendfile = region_sender.os.sendfile

    def counting_sendfile(*args):
        sendfile_calls.append(args)
        return real_sendfile(*args)
    monkeypatch.setattr(region_sender.os, "sendfile", counting_sendfile)
    writes = []
    real_write = asyncio.selector_events._SelectorSocketTransport.write  # the tests' loop is asyncio's

    def counting_write(transport, data):
        if isinstance(transport.get_protocol(), KafkaConnection):  # the server's side, not the client's
            writes.append(len(data))
        return real_write(transport, data)
    monkeypatch.setattr(asyncio.selector_events._SelectorSocketTransport, "write", counting_write)
    data = os.urandom(64 << 10)
    path = tmp_path / "segment"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        length = 700
        dispatcher = SmallRegions(fd, length)
        server = await serve(dispatcher)
        client = await Client.open(server.port)
        count = 5
        client.send_api_versions(count)
        frames = await read_frames(client.reader, count)
        for number, frame in enumerate(frames):
            assert frame == (number.to_bytes(4, "big") + b"head" + data[number * 10:number * 10 + length] + b"|"
                             + data[3:3 + length] + b"|")
        assert sendfile_calls == []
        assert writes == [4 + 4 + 4 + 2 * length + 2] * count, "one write a response"
        assert all(region.pins == 0 for region in dispatcher.regions), "every pin released"
    finally:
        os.close(fd)


async def test_a_file_cut_under_a_small_region_closes_the_connection(serve, tmp_path):  # noqa: F811
    """A region read short would break the frame: the connection closes, as when sendfile sends short."""
    path = tmp_path / "segment"
    path.write_bytes(os.urandom(1000))
    fd = os.open(path, os.O_RDONLY)
    try:
        dispatcher = SmallRegions(fd, 800)  # the second request's region starts at 10: 10 + 800 fits,
        server = await serve(dispatcher)
        client = await Client.open(server.port)
        client.send_api_versions(1)
        assert len((await read_frames(client.reader, 1))[0]) == 4 + 4 + 2 * 800 + 2
        os.truncate(path, 500)  # ... until the file is cut under it
        client.send_api_versions(1)
        async with asyncio.timeout(30):
            assert await client.reader.read() == b"", "closed without a broken frame"
        assert all(region.pins == 0 for region in dispatcher.regions), "every pin released"
    finally:
        os.close(fd)
