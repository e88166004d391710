"""``weir.run_broker()``: a broker in a child process, for synchronous code and crash tests.

    with weir.run_broker({"log.segment.bytes": 1 << 20}) as broker:
        broker.create_topic("orders", partitions=3)
        ...                       # any client, on broker.bootstrap_servers
        broker.kill()             # kill -9: no flush, no snapshot, connections reset
        broker.restart()          # same port, same data directory: recovery runs

The child is ``python -m weir.broker``, the ``weir`` command itself; its log (stderr) is
kept in ``log_lines``.
"""

from __future__ import annotations

import atexit
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .settings import PORT_ATTEMPTS, as_properties, free_port
from .topics import create_topic_blocking

READY = "Weir broker ready on"  # the line broker/__main__.py logs once it serves
ADDRESS_IN_USE = "Address already in use"
LOG_LINES_KEPT = 20000

_alive: set["ProcessBroker"] = set()  # children a dying interpreter kills, so none outlives its tests


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_alive):
        broker.kill()


class BrokerStartError(RuntimeError):
    """The broker exited or did not become ready; the message ends with its log."""


class ProcessBroker:
    """A Weir broker in a child process; a context manager (``run_broker()`` makes and starts one).

    ``settings``: Kafka broker settings by their dotted names. ``port``: a free one unless
    given. ``data_dir``: a temporary directory removed by ``close()`` unless given.
    """

    def __init__(self, settings: Mapping[str, object] | None = None, *, host: str = "127.0.0.1",
                 port: int | None = None, data_dir: str | Path | None = None, startup_timeout: float = 30.0):
        self.settings = as_properties(settings)
        self.host = host
        self._port_given = port is not None
        self.port = port if port is not None else free_port(host)
        self._own_data_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="weir-"))
        self.startup_timeout = startup_timeout
        self.log_lines: collections.deque[str] = collections.deque(maxlen=LOG_LINES_KEPT)
        self.lines_logged = 0  # all lines ever logged (log_lines keeps the last LOG_LINES_KEPT)
        self._process: subprocess.Popen | None = None
        self._settled = threading.Event()  # ready, or the process ended
        self._ready = False  # the current process logged its ready line

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def log(self) -> str:
        return "".join(self.log_lines)

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def command(self) -> list[str]:
        # -P: the working directory is not put on sys.path, so a folder named like ours cannot shadow weir
        command = [sys.executable, "-P", "-m", "weir.broker", "--host", self.host, "--port", str(self.port),
                   "--data-dir", str(self.data_dir)]
        for name, value in self.settings.items():
            command += ["--override", f"{name}={value}"]
        return command

    def start(self) -> "ProcessBroker":
        """Start and wait for the ready line; BrokerStartError (with the log) if it exits or times out."""
        if self.alive():
            raise RuntimeError("the broker is running already")
        for attempt in range(1, PORT_ATTEMPTS + 1):
            logged_before = self.lines_logged
            self._spawn()
            if self._settled.wait(self.startup_timeout) and self._ready:
                return self
            self.kill()
            this_run = list(self.log_lines)[len(self.log_lines) - (self.lines_logged - logged_before):]
            taken = any(ADDRESS_IN_USE in line for line in this_run)
            if taken and not self._port_given and attempt < PORT_ATTEMPTS:
                self.port = free_port(self.host)  # taken between free_port() and the broker's bind
                continue
            how = "exited" if self._settled.is_set() else f"was not ready in {self.startup_timeout:.0f} s"
            raise BrokerStartError(f"the Weir broker on {self.bootstrap_servers} {how}; its log:\n{self.log}")
        raise AssertionError("unreachable")

    def _spawn(self) -> None:
        self._settled.clear()
        self._ready = False
        process = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._process = process
        _alive.add(self)
        threading.Thread(target=self._drain, args=(process,), name=f"weir-broker-log-{process.pid}",
                         daemon=True).start()

    def _drain(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            self.log_lines.append(line)
            self.lines_logged += 1
            if READY in line and process is self._process:
                self._ready = True
                self._settled.set()
        process.stderr.close()
        if process is self._process:
            self._settled.set()

    def kill(self) -> None:
        """kill -9: no flush, no producer-state snapshot, client connections reset."""
        process = self._process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
        _alive.discard(self)

    def stop(self, timeout: float = 30.0) -> int | None:
        """Clean shutdown (SIGTERM, as an operator's); the exit code, None if it never ran."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        _alive.discard(self)
        return process.returncode

    def restart(self) -> "ProcessBroker":
        """Start again on the same port and data directory; a running broker is stopped cleanly
        first (call ``kill()`` before for a crash)."""
        self.stop()
        return self.start()

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None) -> str:
        """Create a topic (``config``: topic settings by Kafka name); returns its name."""
        return create_topic_blocking(self.bootstrap_servers, name, partitions, config)

    def close(self) -> None:
        """Stop, and remove the data directory if it is a temporary one of ours."""
        self.stop()
        if self._own_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "ProcessBroker":
        return self if self.alive() else self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()


@contextmanager
def run_broker(settings: Mapping[str, object] | None = None, *, host: str = "127.0.0.1", port: int | None = None,
               data_dir: str | Path | None = None, startup_timeout: float = 30.0) -> Iterator[ProcessBroker]:
    """A started ``ProcessBroker``, stopped (and its temporary data directory removed) on exit."""
    broker = ProcessBroker(settings, host=host, port=port, data_dir=data_dir, startup_timeout=startup_timeout)
    with broker.start():
        yield broker
