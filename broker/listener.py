"""Listening sockets and the accept loop: a failure to accept is logged and retried, never silent.

uvloop's own server (``loop.create_server``) closes its listening socket, with
no log line, the first time accept() fails, e.g. with EMFILE when the process
is out of file descriptors: from then on every client is refused. Weir
therefore accepts on sockets it made itself: a failure is logged with its
cause and accept is retried a second later (asyncio's own server does the
same), while new connections wait in the listen backlog; once descriptors are
free again they are served.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable

log = logging.getLogger(__name__)

ACCEPT_RETRY_DELAY = 1.0  # seconds, as asyncio's BaseEventLoop waits after EMFILE
_OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
# Seconds a client has to finish its TLS handshake (Kafka has no such setting: its handshake
# is bounded by connections.max.idle.ms); asyncio's own default is 60.
TLS_HANDSHAKE_TIMEOUT = 10.0


class Listener:
    def __init__(self, protocol_factory: Callable[[], asyncio.Protocol], host: str, port: int, backlog: int,
                 ssl_context: ssl.SSLContext | None = None, max_handshakes: int = 2147483647):
        self._factory = protocol_factory
        self._host = host
        self._port = port
        self._backlog = backlog
        self._ssl = ssl_context
        self.sockets: list[socket.socket] = []
        self._tasks: list[asyncio.Task] = []
        self._handshakes: set[asyncio.Task] = set()  # TLS handshakes under way (never awaited by the accept loop)
        # A connection counts against max.connections once its handshake is done (connection_made);
        # until then this bounds how many handshakes may be under way at once.
        self._max_handshakes = max_handshakes

    async def start(self) -> None:
        """Bind every address ``host`` resolves to (all interfaces when empty), then accept."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(self._host or None, self._port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        try:
            for family, kind, proto, _name, address in dict.fromkeys(infos):
                sock = socket.socket(family, kind, proto)
                self.sockets.append(sock)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(address)
                sock.listen(self._backlog)
                sock.setblocking(False)
        except OSError:
            self._close_sockets()
            raise
        self._tasks = [loop.create_task(self._accept_loop(sock)) for sock in self.sockets]

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        host, port = sock.getsockname()[:2]
        where = f"{host}:{port}"
        while True:
            try:
                conn, _address = await loop.sock_accept(sock)
            except OSError as exc:
                if exc.errno in _OUT_OF_RESOURCES:
                    log.error("cannot accept connections on %s: %s; new connections wait in the backlog, "
                              "retrying in %.0f s", where, exc, ACCEPT_RETRY_DELAY)
                    await asyncio.sleep(ACCEPT_RETRY_DELAY)
                else:  # the client gave up before we accepted (ECONNABORTED and the like)
                    log.warning("accept on %s failed: %s", where, exc)
                continue
            try:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._ssl is None:
                    await loop.connect_accepted_socket(self._factory, conn)
                    continue
            except OSError as exc:
                log.warning("could not set up an accepted connection on %s: %s", where, exc)
                conn.close()
                continue
            # A TLS handshake takes round trips: in its own task, so a slow or silent client
            # delays nobody else; it is bounded by TLS_HANDSHAKE_TIMEOUT.
            if len(self._handshakes) >= self._max_handshakes:
                log.info("Rejected connection on %s: %d TLS handshakes under way (max.connections)",
                         where, len(self._handshakes))
                conn.close()
                continue
            task = loop.create_task(self._tls_handshake(conn, where))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _tls_handshake(self, conn: socket.socket, where: str) -> None:
        peer = "?"
        try:
            peer_host, peer_port = conn.getpeername()[:2]
            peer = f"{peer_host}:{peer_port}"
            await asyncio.get_running_loop().connect_accepted_socket(
                self._factory, conn, ssl=self._ssl, ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT)
        except (TimeoutError, OSError, ssl.SSLError, ConnectionError) as exc:
            # Kafka logs failed TLS handshakes at INFO: "Failed authentication with /host (SSL handshake failed)"
            log.info("Failed authentication with %s on %s (SSL handshake failed: %s)", peer, where,
                     getattr(exc, "reason", None) or exc or type(exc).__name__)
            conn.close()

    async def close(self) -> None:
        tasks = self._tasks + list(self._handshakes)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._close_sockets()

    def _close_sockets(self) -> None:
        for sock in self.sockets:
            sock.close()
