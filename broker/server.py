"""The asyncio server: with listener.py (accepting), the only code that touches sockets.

Each connection parses frames as they arrive (sans-IO ``ServerConnection``)
and queues them; one task per connection answers them strictly in order, so
pipelined requests get their responses in request order as Kafka clients
require. A frame that cannot be parsed closes that connection only.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from protocol.connection import ServerConnection
from protocol.primitives import DecodeError

from .dispatcher import ClosingError, Dispatcher
from .listener import Listener

log = logging.getLogger(__name__)

MAX_QUEUED_REQUESTS = 64


class KafkaConnection(asyncio.Protocol):
    def __init__(self, dispatcher: Dispatcher, max_frame_size: int, connections: set):
        self._dispatcher = dispatcher
        self._codec = ServerConnection(max_frame_size)
        self._connections = connections
        self._queue: deque = deque()
        self._ready = asyncio.Event()
        self._transport: asyncio.Transport | None = None
        self._worker: asyncio.Task | None = None
        self._peer = "?"
        self._client_host = ""
        self._paused = False

    def connection_made(self, transport):
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._client_host = f"/{peer[0]}" if peer else ""  # as Kafka shows it in DescribeGroups
        self._connections.add(self)
        self._worker = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data):
        try:
            requests = self._codec.receive_data(data)
        except DecodeError as exc:
            self._close(f"malformed frame: {exc}")
            return
        if requests:
            self._queue.extend(requests)
            self._ready.set()
            if len(self._queue) >= MAX_QUEUED_REQUESTS and not self._paused:
                self._paused = True
                self._transport.pause_reading()

    def connection_lost(self, exc):
        self._connections.discard(self)
        if self._worker is not None:
            self._worker.cancel()

    async def _serve(self):
        dispatch = self._dispatcher.dispatch
        queue = self._queue
        try:
            while True:
                if not queue:
                    self._ready.clear()
                    await self._ready.wait()
                request = queue.popleft()
                if self._paused and len(queue) < MAX_QUEUED_REQUESTS // 2:
                    self._paused = False
                    self._transport.resume_reading()
                try:
                    response = await dispatch(request, self._client_host)
                except (ClosingError, DecodeError) as exc:
                    self._close(f"{exc} (api key {request.header.api_key} v{request.header.api_version}, "
                                f"client {request.header.client_id!r})")
                    return
                except Exception:
                    log.exception("unexpected error handling api key %d from %s; closing the connection",
                                  request.header.api_key, self._peer)
                    self._transport.close()
                    return
                if response is not None and not self._transport.is_closing():
                    self._transport.write(response)
        except asyncio.CancelledError:
            pass

    def _close(self, reason: str) -> None:
        log.warning("closing connection from %s: %s", self._peer, reason)
        self._transport.close()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


class Server:
    def __init__(self, context, dispatcher: Dispatcher):
        self.context = context
        self.dispatcher = dispatcher
        self._listener: Listener | None = None
        self._connections: set[KafkaConnection] = set()

    async def start(self) -> None:
        max_frame = self.context.config["socket.request.max.bytes"]
        # Our own accept loop, not loop.create_server: see listener.py (accept failures are logged).
        self._listener = Listener(lambda: KafkaConnection(self.dispatcher, max_frame, self._connections),
                                  self.context.host, self.context.port, backlog=1024)
        await self._listener.start()

    @property
    def port(self) -> int:
        return self._listener.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._listener is not None:
            await self._listener.close()
            for connection in list(self._connections):
                connection.close()
