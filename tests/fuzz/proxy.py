"""A TCP proxy between real clients and the broker that records every request frame.

It runs its own event loop in a thread, so blocking clients (confluent-kafka,
kafka-python) and asyncio ones (aiokafka) can both go through it. The broker
advertises the proxy's address, so clients' later connections (coordinator,
partition leader) come through it too. Bytes pass untouched in both directions.
"""

from __future__ import annotations

import asyncio
import threading

from weir.protocol.framing import FrameReader

MAX_RECORDED_FRAME = 1 << 20  # larger frames pass through but are not kept


class RecordingProxy:
    def __init__(self, listen_port: int, broker_port: int):
        self.listen_port = listen_port
        self.broker_port = broker_port
        self.frames: list[bytes] = []  # request frames without their length prefix, in arrival order
        self.recording = True
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None

    def start(self) -> RecordingProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(asyncio.start_server(
            self._relay, "127.0.0.1", self.listen_port, reuse_address=True), self._loop).result(10)
        return self

    def stop_recording(self) -> list[bytes]:
        """Stop keeping frames (traffic still flows); the frames kept so far."""
        self.recording = False
        return list(self.frames)

    def stop(self) -> None:
        async def close():
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _relay(self, client_reader, client_writer):
        try:
            broker_reader, broker_writer = await asyncio.open_connection("127.0.0.1", self.broker_port)
        except OSError:
            client_writer.close()
            return
        upstream = asyncio.ensure_future(self._pump(client_reader, broker_writer, FrameReader(2**31 - 1)))
        downstream = asyncio.ensure_future(self._pump(broker_reader, client_writer, None))
        try:
            await asyncio.wait([upstream, downstream], return_when=asyncio.FIRST_COMPLETED)
        finally:
            upstream.cancel()
            downstream.cancel()
            client_writer.close()
            broker_writer.close()

    async def _pump(self, reader, writer, frames: FrameReader | None) -> None:
        try:
            while data := await reader.read(65536):
                if frames is not None and self.recording:
                    self.frames.extend(bytes(f) for f in frames.feed(data) if len(f) <= MAX_RECORDED_FRAME)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
