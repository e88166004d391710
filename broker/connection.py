"""One client connection: frames in, responses out, strictly in request order.

Frames are parsed as they arrive (sans-IO ``ServerConnection``) and queued;
one task per connection answers them in order, so pipelined requests get their
responses in request order as Kafka clients require. A frame that cannot be
parsed closes this connection only.

Flow control. Kafka mutes a connection while one of its responses is in
flight. Weir lets a connection work ahead on pipelined requests, but bounds
the bytes it holds for it (``weir.connection.max.held.bytes``): requests read
and not yet handled plus responses the client has not yet taken (the
transport's write buffer). Over the bound, reading from the socket stops, and
the next request waits until the client has drained enough of its responses
that one more fits. A single response larger than the bound is still sent
whole, so the most held is about the bound plus one response.

Zero-copy fetch. A response with file regions (``ResponsePieces``: a Fetch
response encoded around its record bytes) is sent piece by piece: buffer
pieces through the transport, regions straight from the segment file to the
socket with sendfile (plain TCP: region_sender.py), or,
where that cannot be (TLS), as one ``pread`` each. The next request waits until the regions are sent, so
order holds; a region costs no memory to hold, and its segment stays pinned
(its descriptor open, see open_files.py) until it is sent or abandoned. A response with
little file data (``COPY_REGIONS_UP_TO``, region_sender.py) is read whole and sent in one write instead.

Idle connections (no bytes read or sent for ``connections.max.idle.ms``)
are closed, as Kafka's selector closes them.

Security. The connection's ``ConnectionAuth`` (broker/security/connection_auth.py) holds its
``Session`` (listener, client address, principal) and, on a SASL listener, answers every
request through the ``Authenticator`` until the exchange succeeds (and again while a
KIP-368 re-authentication runs).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from weir.protocol.connection import RawRequest, ServerConnection
from weir.protocol.response_pieces import ResponsePieces
from weir.protocol.primitives import DecodeError

from .connection_quotas import client_ip
from .dispatcher import ClosingError
from .region_sender import COPY_REGIONS_UP_TO, RegionSender, joined_frame
from .security.connection_auth import ConnectionAuth

if TYPE_CHECKING:
    from .clock import Timer
    from .config import BrokerConfig
    from .security.listener_security import ListenerSecurity
    from .security.session import Session
    from .server import Server


def _describe(request: RawRequest) -> str:
    header = request.header
    if header is None:
        return "a bare SASL token"  # after SaslHandshake v0
    return f"api key {header.api_key} v{header.api_version}, client {header.client_id!r}"


log = logging.getLogger(__name__)

#: Requests queued per connection before reading pauses, whatever their size: a parsed request
#: costs a few hundred bytes of objects beyond its frame, which the byte bound does not see.
MAX_QUEUED_REQUESTS = 64


@dataclass
class ConnectionCounters:
    """Counts of the connection layer's bounds being met (read by metrics)."""
    flow_control_pauses: int = 0  # a connection stopped being read because it held too much
    idle_closed: int = 0
    refused: int = 0  # over max.connections or max.connections.per.ip


@dataclass(frozen=True)
class ConnectionSettings:
    max_frame_size: int
    max_held_bytes: int
    max_idle_ms: int  # negative: never closed for idleness

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ConnectionSettings:
        return cls(config["socket.request.max.bytes"], config["weir.connection.max.held.bytes"],
                   config["connections.max.idle.ms"])


class KafkaConnection(asyncio.Protocol):
    def __init__(self, server: Server, settings: ConnectionSettings, security: ListenerSecurity) -> None:
        self._server = server  # counts connections in and out (quotas, connection_count)
        self._security = security  # ListenerSecurity of the listener that accepted it
        self._auth: ConnectionAuth | None = None  # its session and SASL exchange, made in connection_made
        self._dispatch = server.dispatcher.dispatch
        self._clock = server.context.clock
        self._counters: ConnectionCounters = server.counters
        self._max_held = settings.max_held_bytes
        self._resume_level = settings.max_held_bytes // 2  # hysteresis: no pause/resume per request
        self._max_idle_ms = settings.max_idle_ms
        self._codec = ServerConnection(settings.max_frame_size)
        self._queue: deque[RawRequest] = deque()
        self._queued_bytes = 0
        self._request_ready = asyncio.Event()
        self._drained = asyncio.Event()  # set while the transport has not paused our writing
        self._drained.set()
        self._reading_paused = False
        self._region_sender: RegionSender | None = None  # made at the first file region
        self._transport: asyncio.Transport | None = None
        self._worker: asyncio.Task[None] | None = None
        self._idle_timer: Timer | None = None
        self._last_active_ms = 0
        self._unsent_at_idle_check = 0
        self._region_sent_at_idle_check = 0
        self._peer = "?"
        self._client_host = ""
        self.ip = ""
        self.admitted = False

    # ---- asyncio.Protocol ----

    def connection_made(self, base_transport: asyncio.BaseTransport) -> None:
        # A stream socket's transport (listener.py: connect_accepted_socket). A cast, not an isinstance
        # check: uvloop's transports do not subclass asyncio.Transport.
        self._transport = transport = cast(asyncio.Transport, base_transport)
        peer = transport.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._client_host = f"/{peer[0]}" if peer else ""  # as Kafka shows it in DescribeGroups
        self.ip = client_ip(peer)
        if not self._server.admit(self):
            transport.close()
            return
        self.admitted = True
        self._auth = ConnectionAuth(self._security, self._client_host, self._peer, self._codec, self._dispatch,
                                    self._clock.now_ms)
        if not self._auth.start(transport):
            transport.close()
            return
        transport.set_write_buffer_limits(high=self._max_held, low=self._resume_level)
        self._last_active_ms = self._clock.now_ms()
        if self._max_idle_ms >= 0:
            self._idle_timer = self._clock.call_later(self._max_idle_ms / 1000, self._check_idle)
        self._worker = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        self._last_active_ms = self._clock.now_ms()
        try:
            requests = self._codec.receive_data(data)
        except DecodeError as exc:
            self._close(f"malformed frame: {exc}")
            return
        if requests:
            for request in requests:
                self._queued_bytes += request.size
            self._queue.extend(requests)
            self._request_ready.set()
            if not self._reading_paused:
                self._update_reading()

    def pause_writing(self) -> None:
        self._drained.clear()

    def resume_writing(self) -> None:
        self._last_active_ms = self._clock.now_ms()  # the client took bytes
        self._drained.set()
        self._update_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.admitted:
            self._server.forget(self)
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._worker is not None:
            self._worker.cancel()
        session = self.session
        for callback in session.on_close.values() if session is not None else ():
            try:
                callback()
            except Exception:
                log.exception("a close callback of the connection from %s failed", self._peer)

    @property
    def session(self) -> Session | None:
        """Who is on the other end (None before the connection is made)."""
        return self._auth.session if self._auth is not None else None

    # ---- bytes held ----

    @property
    def _live_transport(self) -> asyncio.Transport:
        """The transport, for the callers that run only after ``connection_made`` set it."""
        transport = self._transport
        assert transport is not None, "the connection is not made yet"
        return transport

    @property
    def bytes_held(self) -> int:
        """Requests read and not yet handled plus responses not yet taken by the client."""
        unsent = self._transport.get_write_buffer_size() if self._transport is not None else 0
        return self._queued_bytes + unsent

    def _update_reading(self) -> None:
        held = self.bytes_held
        transport = self._live_transport
        if not self._reading_paused:
            if held > self._max_held or len(self._queue) >= MAX_QUEUED_REQUESTS:
                if transport.is_closing():
                    return
                self._reading_paused = True
                transport.pause_reading()
                self._counters.flow_control_pauses += 1
                log.debug("not reading from %s until it drains: %d bytes held (bound %d), %d requests queued",
                          self._peer, held, self._max_held, len(self._queue))
        elif held <= self._resume_level and len(self._queue) < MAX_QUEUED_REQUESTS // 2:
            self._reading_paused = False
            if not transport.is_closing():
                transport.resume_reading()

    async def _drain_to(self, level: int) -> None:
        """Wait until the client has taken enough that at most ``level`` response bytes are unsent."""
        transport = self._live_transport
        if transport.get_write_buffer_size() <= level:
            return
        # The transport calls pause_writing now (the buffer is over the new high mark) unless it
        # already has, and resume_writing once the buffer is at or below the low mark.
        transport.set_write_buffer_limits(high=level, low=level)
        await self._drained.wait()
        transport.set_write_buffer_limits(high=self._max_held, low=self._resume_level)

    # ---- answering requests in order ----

    async def _serve(self) -> None:
        queue = self._queue
        transport = self._live_transport
        auth = self._auth
        assert auth is not None  # made before this task is
        session = auth.session
        try:
            while not transport.is_closing():
                if not queue:
                    if self._reading_paused:
                        # Nothing queued: reading resumes once the client takes its responses.
                        await self._drain_to(self._resume_level)
                        self._update_reading()
                        continue
                    self._request_ready.clear()
                    await self._request_ready.wait()
                    continue
                # Its response will be held too: first let the client drain what is over the bound.
                # With more queued than the bound, that is everything (handling is then what frees bytes).
                room = self._max_held - self._queued_bytes
                if transport.get_write_buffer_size() > max(room, 0):
                    await self._drain_to(max(room, 0))
                request = queue.popleft()
                self._queued_bytes -= request.size
                if self._reading_paused:
                    self._update_reading()
                try:
                    if session.expires_at_ms is not None and auth.authenticator is None \
                            and not auth.check_session(request, transport):
                        return
                    if auth.authenticator is not None:
                        if not await auth.authenticate(request, transport, queue):
                            return
                        continue
                    response = await self._dispatch(request, self._client_host, session)
                except (ClosingError, DecodeError) as exc:
                    self._close(f"{exc} ({_describe(request)})")
                    return
                except Exception:
                    log.exception("unexpected error handling %s from %s; closing the connection",
                                  _describe(request), self._peer)
                    transport.close()
                    return
                if session.mute_ms and not session.answer_before_mute:
                    await self._mute(session)  # client quotas: an older client's answer is held back
                if response is None:
                    if session.mute_ms:
                        await self._mute(session)
                    continue
                if type(response) is ResponsePieces and response.regions:
                    if response.region_bytes <= COPY_REGIONS_UP_TO:
                        if not self._send_joined(response):
                            return
                    elif not await self._send_pieces(response):
                        return
                elif not transport.is_closing():
                    # What stays unsent counts against the bound when more requests arrive (data_received)
                    # and before the next one is handled (above).
                    transport.write(response)
                self._last_active_ms = self._clock.now_ms()
                if session.mute_ms:
                    await self._mute(session)  # client quotas (KIP-219): muted after the answer
        except asyncio.CancelledError:
            pass

    async def _mute(self, session: Session) -> None:
        """Handle nothing more from this client for the throttle time a quota asked for (broker/quota);
        requests it sends meanwhile wait, unanswered, as Kafka leaves them in the muted socket."""
        mute_s, session.mute_ms = session.mute_ms / 1000, 0
        await self._clock.sleep(mute_s)

    def _send_joined(self, response: ResponsePieces) -> bool:
        """Send a response with little file data as one write; False (closed) when a region read short."""
        frame = joined_frame(response)
        if frame is None:
            self._close("a segment was cut under a region of a response")
            return False
        transport = self._live_transport
        if not transport.is_closing():
            transport.write(frame)
        return True

    async def _send_pieces(self, response: ResponsePieces) -> bool:
        """Send a response with file regions; False when the connection is closed instead."""
        transport = self._live_transport
        regions_left = len(response.regions)
        try:
            for piece in response.pieces():
                if transport.is_closing():
                    return False
                if type(piece) is memoryview:
                    transport.write(piece)
                    continue
                region, fd = piece
                sender = self._region_sender
                if sender is None:
                    sender = self._region_sender = RegionSender(transport)
                sent = None
                if sender.usable:
                    await self._drain_to(0)  # the bytes before the region go first
                    if transport.is_closing():
                        return False
                    try:
                        sent = await sender.send(fd, region.position, region.length)
                    except NotImplementedError:
                        pass  # copied below, and from now on
                    except (BrokenPipeError, ConnectionResetError):
                        # the client went away mid-response (a consumer closed): ordinary, as Kafka logs it
                        log.debug("client %s closed its connection while a fetch response was sent", self._peer)
                        transport.close()
                        return False
                    except OSError as exc:
                        self._close(f"sending a fetch response failed: {exc}")
                        return False
                if sent is None:
                    transport.write(region.read())  # one pread; the transport holds it like any response
                elif sent != region.length:  # the file was cut under the region: the frame is broken
                    self._close(f"sent {sent} of {region.length} bytes of a segment region")
                    return False
                else:
                    self._last_active_ms = self._clock.now_ms()
                regions_left -= 1
                if not regions_left:
                    response.release()  # the files are free before the client has the last bytes
        finally:
            response.release()
        return True

    # ---- idleness and closing ----

    def _check_idle(self) -> None:
        self._idle_timer = None
        transport = self._live_transport
        if transport.is_closing():
            return
        unsent = transport.get_write_buffer_size()
        region_sent = self._region_sender.sent_total if self._region_sender is not None else 0
        if unsent < self._unsent_at_idle_check or region_sent != self._region_sent_at_idle_check:
            self._last_active_ms = self._clock.now_ms()  # the client took bytes since the last check
        self._unsent_at_idle_check = unsent
        self._region_sent_at_idle_check = region_sent
        idle_for = self._clock.now_ms() - self._last_active_ms
        if idle_for >= self._max_idle_ms:
            self._counters.idle_closed += 1
            log.debug("closing connection from %s: idle for %d ms (connections.max.idle.ms %d)",
                      self._peer, idle_for, self._max_idle_ms)
            transport.close()
            return
        # now_ms is wall-clock time: a clock stepped back must not push the check out beyond the idle time
        wait_ms = min(self._max_idle_ms - idle_for, self._max_idle_ms)
        self._idle_timer = self._clock.call_later(wait_ms / 1000, self._check_idle)

    def _close(self, reason: str) -> None:
        log.warning("closing connection from %s: %s", self._peer, reason)
        self._live_transport.close()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

