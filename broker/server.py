"""The asyncio server: the listening sockets (listener.py) and the set of open connections.

Each accepted connection is a ``KafkaConnection`` (``broker/connection.py``),
which answers its requests in order and bounds what it holds. Here: Kafka's
connection quotas (``max.connections``, ``max.connections.per.ip`` and its
overrides) and the totals the metrics read.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from .connection import ConnectionCounters, ConnectionSettings, KafkaConnection
from .connection_quotas import ConnectionQuotas
from .dispatcher import Dispatcher
from .listener import Listener
from .security.listener_security import ListenerSecurity

if TYPE_CHECKING:
    from .context import BrokerContext

log = logging.getLogger(__name__)


class ListenError(OSError):
    """The broker's or the metrics listener's address could not be bound; ``what`` says which."""

    def __init__(self, what: str, host: str, port: int, cause: OSError):
        super().__init__(cause.errno, f"cannot listen{what} on {host}:{port}: {cause.strerror or cause}")
        self.what = what


class Server:
    def __init__(self, context: BrokerContext, dispatcher: Dispatcher) -> None:
        self.context = context
        self.dispatcher = dispatcher
        self.counters = ConnectionCounters()
        self._settings = ConnectionSettings.from_config(context.config)
        self._quotas = ConnectionQuotas(context.config)
        # one per entry of `listeners` (broker/security/listeners.py); a bad TLS or SASL setting fails here
        self.listeners = [ListenerSecurity.build(context.config, spec, context.scram, context.delegation_tokens)
                          for spec in context.listeners]
        self._listeners: list[Listener] = []
        self._connections: set[KafkaConnection] = set()

    async def start(self) -> None:
        """Open every listener; ListenError (host and port of the one that failed) when one cannot be."""
        # Our own accept loop, not loop.create_server: see listener.py (accept failures are logged).
        for security in self.listeners:
            spec = security.spec
            listener = Listener(functools.partial(KafkaConnection, self, self._settings, security),
                                spec.host, spec.port, backlog=1024, ssl_context=security.ssl_context,
                                max_handshakes=self.context.config["max.connections"])
            try:
                await listener.start()
            except OSError as exc:
                await self.stop()
                raise ListenError("", spec.host, spec.port, exc) from exc
            self._listeners.append(listener)
            security.bound_to(listener.sockets[0].getsockname()[1])
        first = self.listeners[0].spec
        self.context.advertised_host, self.context.advertised_port = first.advertised_host, first.advertised_port

    @property
    def port(self) -> int:
        """The first listener's port."""
        return self.listeners[0].spec.port

    def describe_listeners(self) -> str:
        return ", ".join(f"{s.spec.name}://{s.spec.host}:{s.spec.port}" for s in self.listeners)

    @property
    def connection_count(self) -> int:
        """Open client connections."""
        return len(self._connections)

    @property
    def bytes_held(self) -> int:
        """Bytes held for all connections: requests read and not yet handled plus unsent responses."""
        return sum(connection.bytes_held for connection in self._connections)

    def admit(self, connection: KafkaConnection) -> bool:
        """Count a new connection in, or refuse it (the caller closes it) with a log line.

        Deviation: over ``max.connections`` Kafka's acceptor stops accepting until a slot frees,
        leaving new connections in the listen backlog; asyncio cannot stop accepting on a listening
        socket short of closing it, so Weir closes the new connection, as Kafka does over
        ``max.connections.per.ip``. Clients reconnect with their reconnect backoff either way.
        """
        refusal = self._quotas.refusal(connection.ip)
        if refusal is not None:
            self.counters.refused += 1
            log.info("Rejected connection from %s, %s.", connection.ip, refusal)
            return False
        self._quotas.add(connection.ip)
        self._connections.add(connection)
        return True

    def forget(self, connection: KafkaConnection) -> None:
        """A counted-in connection closed."""
        self._connections.discard(connection)
        self._quotas.remove(connection.ip)

    async def stop(self) -> None:
        for listener in self._listeners:
            await listener.close()
        self._listeners = []
        for connection in list(self._connections):
            connection.close()
