"""Sans-IO connection state for both ends of a Kafka connection.

Bytes go in with ``receive_data`` and typed events come out; ``send_*`` turns
typed messages into bytes to write. Nothing here touches a socket, which is how
the broker, our client and the tests share one codec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import primitives as p
from .framing import FrameReader
from .headers import (RequestHeader, decode_request_header, encode_request_header,
                      response_header_flexible)
from .messages import BY_KEY
from .response_pieces import ResponsePieces

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from .schema import Message

DEFAULT_MAX_FRAME = 100 * 1024 * 1024


@dataclass(slots=True)
class RawRequest:
    """A framed request whose header is parsed and whose body is still bytes.

    ``header`` is None for a bare SASL token (the frames after SaslHandshake v0)."""
    header: RequestHeader | None
    body: memoryview
    size: int  # bytes of the frame (after its length prefix), what holding it costs


class ServerConnection:
    """The broker's side: frames in, parsed headers out; responses in, frames out."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME) -> None:
        self._frames = FrameReader(max_frame_size)
        self.raw_frames = False  # True: frames are bare SASL tokens, not requests (after SaslHandshake v0)

    @property
    def max_frame_size(self) -> int:
        return self._frames.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, size: int) -> None:
        self._frames.max_frame_size = size  # smaller before SASL authentication (sasl.server.max.receive.size)

    def receive_data(self, data: Buffer) -> list[RawRequest]:
        requests: list[RawRequest] = []
        for payload in self._frames.feed(data):
            view = memoryview(payload)
            requests.append(RawRequest(None, view, len(view)) if self.raw_frames else self.parse_request(view))
        return requests

    @staticmethod
    def parse_request(frame: memoryview) -> RawRequest:
        """A frame read as a request: its header parsed, its body left as bytes. Raises DecodeError."""
        header, body_start = decode_request_header(frame)
        return RawRequest(header, frame[body_start:], len(frame))

    @staticmethod
    def encode_response(header: RequestHeader, version: int, message: Message, body: Any) -> ResponsePieces:
        """Frame a response to ``header`` with ``body`` encoded at ``version``.

        Returned as the bytearray it was built in: a Fetch response can be tens
        of megabytes, and a ``bytes()`` copy of it would be pure overhead. File
        regions in ``body`` (zero-copy fetch) stay out of the buffer: see
        ``ResponsePieces``; the sender must ``release`` a response that has regions.
        """
        out = ResponsePieces(4)
        out += p.INT32.pack(header.correlation_id)
        if response_header_flexible(header.api_key, version):
            out.append(0)
        try:
            message.encode_into(out, version, body)
        except BaseException:
            out.release()
            raise
        p.INT32.pack_into(out, 0, out.frame_size - 4)
        return out


class ClientConnection:
    """Our client's side: requests out with correlation ids, responses matched in order."""

    def __init__(self, client_id: str = "weir", max_frame_size: int = DEFAULT_MAX_FRAME) -> None:
        self.client_id = client_id
        self._frames = FrameReader(max_frame_size)
        self._next_correlation = 0
        self._in_flight: list[tuple[int, int, int]] = []  # (correlation id, api key, version)

    def send_request(self, api_key: int, version: int, body: Any, *, expect_response: bool = True) -> bytearray:
        correlation_id = self._next_correlation
        self._next_correlation = (correlation_id + 1) & 0x7FFFFFFF
        out = bytearray(4)
        encode_request_header(out, RequestHeader(api_key, version, correlation_id, self.client_id))
        BY_KEY[api_key].REQUEST.encode_into(out, version, body)
        p.INT32.pack_into(out, 0, len(out) - 4)
        if expect_response:
            self._in_flight.append((correlation_id, api_key, version))
        return out  # a bytearray: a transport takes it as it is (bytes() would copy a produce's batches again)

    def receive_data(self, data: Buffer) -> list[Any]:
        """Decode every completed response, in request order (instances of the message's generated class)."""
        return [self.receive_frame(payload) for payload in self._frames.feed(data)]

    def receive_frame(self, payload: p.ReadBuffer) -> Any:
        """Decode one whole response frame (after its length prefix), for a caller that frames the stream
        itself (client/connection.py reads each large answer straight into a buffer of its size)."""
        if not self._in_flight:
            raise p.DecodeError("response with no request in flight")
        correlation_id, api_key, version = self._in_flight.pop(0)
        got = p.INT32.unpack_from(payload, 0)[0]
        if got != correlation_id:
            raise p.DecodeError(f"correlation id {got}, expected {correlation_id}")
        pos = 4
        if response_header_flexible(api_key, version):
            count, pos = p.read_uvarint(payload, pos)
            for _ in range(count):
                _tag, pos = p.read_uvarint(payload, pos)
                size, pos = p.read_uvarint(payload, pos)
                pos += size
        return BY_KEY[api_key].RESPONSE.decode(version, memoryview(payload)[pos:])
