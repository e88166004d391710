"""``weir.Broker``: a broker served by the caller's own event loop.

    async with weir.Broker({"transaction.max.timeout.ms": 60000}) as broker:
        topic = await broker.create_topic("orders", partitions=3)
        async with Producer(broker.bootstrap_servers) as producer: ...

It starts the way the ``weir`` command does (``weir.broker.lifecycle.RunningBroker``), so
what a test sees is what the command line broker does, minus its process: start-up is the
time to load the data directory (milliseconds when it is new).
"""

from __future__ import annotations

import errno
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .fault_shortcuts import FaultShortcuts
from .settings import PORT_ATTEMPTS, as_properties, free_port
from .topics import create_topic

if TYPE_CHECKING:
    from weir.broker.faults import FaultTable
    from weir.broker.lifecycle import RunningBroker  # imported when a broker starts: `import weir` stays light


class Broker(FaultShortcuts):
    """A Weir broker in the running event loop; an async context manager.

    ``settings``: Kafka broker settings by their dotted names (``{"num.partitions": 3}``), as
    the broker's ``--override`` takes them. ``port``: a free one unless given. ``data_dir``: a
    temporary directory removed on exit unless given (a given one is kept).

    Offers no ``kill()``, deliberately: a crash cannot be imitated inside the process that
    goes on running. The broker's tasks, timers and open files live in the caller's process
    and loop; stopping them without their clean-up paths would leave tasks that still hold
    the old state and write to the same files the restarted broker opens, which no real
    crash does. ``weir.run_broker()`` runs the broker in a child process, whose ``kill()``
    is kill -9; use it to test crash recovery. ``restart()`` here is a clean restart.

    Fault injection is on (``faults``, ``pause()``, ``disk_full()``; weir/testing/faults.py),
    driven in-process, unless ``settings`` say ``weir.faults.enable: False``.
    """

    def __init__(self, settings: Mapping[str, object] | None = None, *, host: str = "127.0.0.1",
                 port: int | None = None, data_dir: str | Path | None = None):
        self.settings = as_properties({"weir.faults.enable": True, **(settings or {})})
        self.host = host
        self._port_given = port is not None
        self.port = port if port is not None else free_port(host)
        self._own_data_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="weir-"))
        self._running: RunningBroker | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._running is not None

    async def start(self) -> Broker:
        """Serve; raises ``ConfigError`` for an unknown setting or a bad value, OSError when
        the given port cannot be bound."""
        from weir.broker.config import BrokerConfig
        from weir.broker.context import BrokerContext
        from weir.broker.lifecycle import ListenError, RunningBroker

        if self._running is not None:
            raise RuntimeError("the broker is running already")
        config = BrokerConfig(self.settings)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            running = RunningBroker(BrokerContext(config, self.data_dir, self.host, self.port))
            try:
                await running.start()
            except ListenError as exc:
                if exc.errno != errno.EADDRINUSE or self._port_given or attempt == PORT_ATTEMPTS:
                    raise
                self.port = free_port(self.host)  # taken between free_port() and our bind
                continue
            self._running = running
            return self
        raise AssertionError("unreachable")

    async def stop(self) -> None:
        """Clean shutdown (files flushed, producer state snapshotted); the data directory stays."""
        running, self._running = self._running, None
        if running is not None:
            await running.stop()

    async def restart(self) -> Broker:
        """Stop cleanly and start again on the same port and data directory."""
        await self.stop()
        return await self.start()

    @property
    def faults(self) -> FaultTable:
        """``error()``, ``delay()``, ``disconnect()``, ``fired()``, ``clear()``: broker/faults.py's table."""
        if self._running is None:
            raise RuntimeError("the broker is not running")
        if self._running.faults is None:
            raise RuntimeError("this broker was started with weir.faults.enable=false")
        return self._running.faults

    async def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None) -> str:
        """Create a topic (``config``: topic settings by Kafka name); returns its name."""
        return await create_topic(self.bootstrap_servers, name, partitions, config)

    async def close(self) -> None:
        """Stop, and remove the data directory if it is a temporary one of ours."""
        await self.stop()
        if self._own_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(self, *exc_info) -> None:
        await self.close()
