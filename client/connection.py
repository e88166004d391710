"""One async connection to a Kafka broker: typed requests in, typed responses out.

Requests may be pipelined; responses are matched to requests in order by the
sans-IO ``ClientConnection``.

The socket is read by an ``asyncio.BufferedProtocol`` that frames the stream itself and reads each
large answer straight into a buffer of its size (``_Wire``): a ``StreamReader`` copied every byte
twice more (into its buffer, and out of it), a quarter of a consumer's CPU reading 10 MB Fetch
answers (bench.fetch with py-spy), and joining 256 KiB reads into a frame cost another copy.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections import Counter, deque
from typing import Any

from weir.protocol.api_keys import ApiKey
from weir.protocol.connection import DEFAULT_MAX_FRAME, ClientConnection
from weir.protocol.errors import Errors
from weir.protocol.messages import BY_KEY, api_versions
from weir.protocol.record_arrow import frame_buffer

from .errors import KafkaConnectionError, error_instance, raise_for

_FRAME_SIZE = struct.Struct(">i")
CLIENT_SOFTWARE = ("weir-python", "0.1.0")

#: The highest version of each transactional request per transaction version. At version 1 (the
#: cluster does not finalize transaction.version 2) our client stays below the versions that mean
#: version 2 or promise to handle TRANSACTION_ABORTABLE (KIP-890), a little below the Java client's
#: TV1 versions (Produce 11, EndTxn / TxnOffsetCommit 4), which add only that promise. At version 2 it
#: sends what the Java 4.x client sends: Produce v12 (adds its partitions implicitly), TxnOffsetCommit
#: v5 (adds the group implicitly), EndTxn v5 (answers the bumped producer id and epoch).
TRANSACTION_HIGHEST: dict[int, dict[int, int]] = {
    1: {ApiKey.PRODUCE: 10, ApiKey.END_TXN: 3, ApiKey.TXN_OFFSET_COMMIT: 3, ApiKey.INIT_PRODUCER_ID: 4,
        ApiKey.ADD_OFFSETS_TO_TXN: 3},
    2: {ApiKey.PRODUCE: 12, ApiKey.END_TXN: 5, ApiKey.TXN_OFFSET_COMMIT: 5, ApiKey.INIT_PRODUCER_ID: 5,
        ApiKey.ADD_OFFSETS_TO_TXN: 4},
}


#: Small answers are read into this reusable buffer, several per read; an answer longer than it gets
#: a buffer of its own size, read into directly (Fetch answers of megabytes: no join, no extra copy).
SCRATCH_SIZE = 64 * 1024


class _Wire(asyncio.BufferedProtocol):
    """The socket's callbacks for one Connection: the answers' frames, write flow control, the end.

    A ``BufferedProtocol``: the event loop reads into the buffer ``get_buffer`` names. Between large
    answers that is a 64 KiB scratch buffer holding any number of small frames (each copied out whole,
    as the scratch is reused); once a frame's length says it is larger than what remains, a buffer of
    exactly its size is taken (``frame_buffer``: uninitialized, from a cache of freed blocks) and the
    socket reads the rest of it straight there. That buffer is
    the frame the codec decodes, and the records the consumer walks are views of it.
    """

    def __init__(self) -> None:
        self.connection: Connection | None = None  # set once the transport is made
        self.writable = asyncio.Event()  # cleared while the transport's write buffer is over its high mark
        self.writable.set()
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._scratch = bytearray(SCRATCH_SIZE)
        self._scratch_view = memoryview(self._scratch)
        self._held = 0  # bytes at the start of the scratch: the beginning of the next frame
        self._frame: memoryview | None = None  # the large frame being filled, and how much of it is
        self._filled = 0

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return self._frame[self._filled:]
        return self._scratch_view[self._held:]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                frame, self._frame = self._frame, None
                self._deliver([frame])
            return
        scratch, view = self._scratch, self._scratch_view
        pos, end = 0, self._held + nbytes
        frames: list[bytes | memoryview] = []
        while end - pos >= 4:
            size = _FRAME_SIZE.unpack_from(scratch, pos)[0]
            if size < 0 or size > DEFAULT_MAX_FRAME:
                self._fail(f"frame size {size} outside [0, {DEFAULT_MAX_FRAME}]")
                return
            if end - pos - 4 >= size:
                frames.append(bytes(view[pos + 4:pos + 4 + size]))
                pos += 4 + size
            elif size + 4 > SCRATCH_SIZE:  # read the rest of it into a buffer of its own
                frame = frame_buffer(size)
                frame[:end - pos - 4] = view[pos + 4:end]
                self._frame, self._filled = frame, end - pos - 4
                pos = end
                break
            else:
                break
        if pos < end:  # the beginning of a frame that fits the scratch: moved to its start
            scratch[:end - pos] = view[pos:end]
        self._held = end - pos
        if frames:
            self._deliver(frames)

    def _deliver(self, frames: list[bytes | memoryview]) -> None:
        # A broker speaks only when asked, and nothing is asked before the Connection is attached.
        if self.connection is not None:
            self.connection.received_frames(frames)

    def _fail(self, reason: str) -> None:
        self._held, self._frame = 0, None
        if self.connection is not None:
            self.connection.malformed(reason)

    def eof_received(self) -> bool:
        return False  # the broker closed: close our side too (connection_lost follows)

    def connection_lost(self, exc: Exception | None) -> None:
        self.writable.set()  # a writer waiting in drain wakes; its request's future holds the error
        if not self.lost.done():
            self.lost.set_result(None)
        if self.connection is not None:
            self.connection.lost(exc)

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()


class Connection:
    """One connection to one broker: typed requests in, typed responses out, pipelined and
    answered in order. The layer under Producer, Consumer and Admin; most programs never use it."""
    def __init__(self, transport: asyncio.Transport, wire: _Wire, client_id: str):
        self._transport = transport
        self._wire = wire
        self._codec = ClientConnection(client_id)
        # Responses are instances of the message's generated class: attributes the checker cannot know.
        self._waiting: deque[asyncio.Future[Any]] = deque()
        self._closed_by: KafkaConnectionError | None = None  # why the connection ended, once it has
        self.versions: dict[int, tuple[int, int]] = {}  # api key -> the broker's (min, max)
        self.finalized_features: dict[str, int] = {}  # ApiVersions v3+ (KIP-584): feature -> finalized level
        self.finalized_features_epoch = -1
        self.sent: Counter[tuple[int, int]] = Counter()  # (api key, version) -> requests written
        wire.connection = self
        if wire.lost.done():  # lost before we were attached
            self.lost(None)

    @classmethod
    async def open(cls, host: str, port: int, client_id: str = "weir-client",
                   ssl_context: ssl.SSLContext | None = None) -> Connection:
        """A TCP connection, over TLS with ``ssl_context`` (the broker's host name checked as the context says)."""
        transport, wire = await asyncio.get_running_loop().create_connection(
            _Wire, host, port, ssl=ssl_context, server_hostname=host if ssl_context is not None else None)
        return cls(transport, wire, client_id)

    @property
    def closed(self) -> bool:
        return self._closed_by is not None

    async def negotiate(self) -> None:
        """Learn the broker's version ranges (ApiVersions v3, or v0 for brokers that refuse it)."""
        request = api_versions.REQUEST(client_software_name=CLIENT_SOFTWARE[0],
                                       client_software_version=CLIENT_SOFTWARE[1])
        response = await self.request(ApiKey.API_VERSIONS, 3, request)
        if response.error_code == Errors.UNSUPPORTED_VERSION:
            response = await self.request(ApiKey.API_VERSIONS, 0, request)
        raise_for(response.error_code, "ApiVersions")
        self.versions = {entry.api_key: (entry.min_version, entry.max_version) for entry in response.api_keys}
        if response.finalized_features_epoch >= 0:  # -1: v0, or a broker without features
            self.finalized_features_epoch = response.finalized_features_epoch
            self.finalized_features = {f.name: f.max_version_level for f in response.finalized_features or ()}

    def version_for(self, api_key: int, highest: int | None = None, *, transaction_version: int = 1) -> int:
        """The highest version both sides speak (capped at ``highest``, and for transactional requests
        at what ``transaction_version`` allows)."""
        ours: tuple[int, int] = BY_KEY[api_key].REQUEST.versions  # a module's attribute: Any to the checker
        cap = TRANSACTION_HIGHEST[transaction_version].get(api_key)
        if cap is not None:
            ours = (ours[0], min(ours[1], cap))
        theirs = self.versions.get(api_key)
        top = ours[1] if highest is None else min(ours[1], highest)
        if theirs is None or max(ours[0], theirs[0]) > min(top, theirs[1]):
            # fatal, as Java's versionMismatch
            raise error_instance(Errors.UNSUPPORTED_VERSION, f"{ApiKey(api_key).name}: broker serves {theirs}, "
                                                            f"we speak {ours[0]}-{top}")
        return min(top, theirs[1])

    def submit(self, api_key: int, version: int, body: Any) -> asyncio.Future[Any]:
        """Write one request now (so requests go out in call order); the future gets its response."""
        if self.closed:
            raise KafkaConnectionError("connection closed")
        frame = self._codec.send_request(api_key, version, body)  # may raise: nothing is queued then
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        self._transport.write(frame)
        self.sent[api_key, version] += 1
        return future

    async def drain(self) -> None:
        """Wait while the socket's send buffer is over its high-water mark. A connection that ends
        meanwhile fails the futures of its requests (``submit``), which is where callers learn it."""
        await self._wire.writable.wait()

    async def request(self, api_key: int, version: int, body: Any) -> Any:
        """Send one request and wait for its response."""
        future = self.submit(api_key, version, body)
        await self.drain()
        return await future

    async def send(self, api_key: int, version: int, body: Any) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        if self._closed_by is not None:
            raise KafkaConnectionError(str(self._closed_by))
        self._transport.write(self._codec.send_request(api_key, version, body, expect_response=False))
        self.sent[api_key, version] += 1
        await self.drain()
        if self._closed_by is not None:  # no future to carry it
            raise KafkaConnectionError(str(self._closed_by))

    def received_frames(self, frames: list[bytes | memoryview]) -> None:
        """Whole answers from the broker, in order: each goes to its waiter."""
        for frame in frames:
            try:
                response = self._codec.receive_frame(frame)
            except Exception as exc:  # a malformed answer ends the connection as a close does
                self.malformed(repr(exc))
                return
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(response)

    def malformed(self, reason: str) -> None:
        """The broker sent what we cannot read: the connection ends, failing what is in flight."""
        self._end(KafkaConnectionError(f"connection lost: {reason}"))
        self._transport.close()

    def lost(self, exc: Exception | None) -> None:
        """The transport is gone (the broker closed, a reset, or our close)."""
        self._end(KafkaConnectionError("connection closed by the broker") if exc is None
                  else KafkaConnectionError(f"connection lost: {exc!r}"))

    def _end(self, error: KafkaConnectionError) -> None:
        if self._closed_by is None:
            self._closed_by = error
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_exception(self._closed_by)

    async def close(self) -> None:
        """Close the socket and wait until it is closed."""
        self._transport.close()
        await self._wire.lost
