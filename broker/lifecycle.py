"""Starting and stopping a broker in the running event loop: the one way Weir starts.

The ``weir`` command (``__main__.py``) and the embeddable ``weir.Broker`` both go through
``RunningBroker``: server built (a bad listener setting fails here, before any file is
touched), log store and coordinators loaded, listener and optional metrics listener
opened, background jobs started; ``stop()`` undoes it in reverse, flushing files and
snapshotting producer state.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from . import handlers  # noqa: F401  (registers every API handler)
from .context import BrokerContext
from .dispatcher import Dispatcher
from .faults_listener import FaultsListener
from .server import ListenError, Server

if TYPE_CHECKING:
    from .metrics.listener import MetricsListener

__all__ = ["ListenError", "RunningBroker"]

log = logging.getLogger("weir")


class RunningBroker:
    def __init__(self, context: BrokerContext):
        self.context = context
        self.server = Server(context, Dispatcher(context))  # ConfigError for a bad listener setting
        self.metrics: MetricsListener | None = None
        self.faults = self.server.dispatcher.faults  # None unless weir.faults.enable (broker/faults.py)
        self.faults_listener = FaultsListener(context, self.faults) if context.config["weir.faults.listener"] else None

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        """Serve; on a port that cannot be bound, everything opened is closed again and ListenError raised."""
        context = self.context
        context.open()
        try:
            await self.server.start()  # ListenError naming the listener that failed
        except OSError:
            await context.close()
            raise
        if context.config["metrics.listener"]:
            from .metrics.listener import MetricsListener  # prometheus_client: for brokers that export metrics
            self.metrics = MetricsListener(context, self.server)
            try:
                await self.metrics.start()
            except OSError as exc:
                await self.server.stop()
                await context.close()
                raise ListenError(" for metrics", self.metrics.host, self.metrics.port_wanted, exc) from exc
        if self.faults_listener is not None:
            try:
                await self.faults_listener.start()
            except OSError as exc:
                await self.stop()
                raise ListenError(" for fault injection", self.faults_listener.host, self.faults_listener.port_wanted,
                                  exc) from exc
        context.start_background_jobs()

    async def stop(self) -> None:
        """Clean shutdown: listeners and connections closed, files flushed, producer state snapshotted."""
        if self.faults_listener is not None:
            await self.faults_listener.stop()
        if self.metrics is not None:
            await self.metrics.stop()
        await self.server.stop()
        await self.context.close()
