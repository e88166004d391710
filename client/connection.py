"""One async connection to a Kafka broker: typed requests in, typed responses out.

Requests may be pipelined; responses are matched to requests in order by the
sans-IO ``ClientConnection``.
"""

from __future__ import annotations

import asyncio
from collections import deque

from protocol.connection import ClientConnection


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str):
        self._reader = reader
        self._writer = writer
        self._codec = ClientConnection(client_id)
        self._waiting: deque[asyncio.Future] = deque()
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open(cls, host: str, port: int, client_id: str = "weir-client") -> "Connection":
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, client_id)

    async def request(self, api_key: int, version: int, body):
        """Send one request and wait for its response."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        self._writer.write(self._codec.send_request(api_key, version, body))
        await self._writer.drain()
        return await future

    async def send(self, api_key: int, version: int, body) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        self._writer.write(self._codec.send_request(api_key, version, body, expect_response=False))
        await self._writer.drain()

    async def _read_loop(self) -> None:
        error: BaseException = ConnectionError("connection closed by the broker")
        try:
            while True:
                data = await self._reader.read(256 * 1024)
                if not data:
                    break
                for response in self._codec.receive_data(data):
                    future = self._waiting.popleft()
                    if not future.done():
                        future.set_result(response)
        except Exception as exc:  # decode errors end the connection like a close does
            error = exc
        finally:
            while self._waiting:
                future = self._waiting.popleft()
                if not future.done():
                    future.set_exception(error)

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except ConnectionError:
            pass
        self._reader_task.cancel()
