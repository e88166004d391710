"""``weir.run_broker()``: a broker in a child process, for synchronous code and crash tests.

    with weir.run_broker({"log.segment.bytes": 1 << 20}) as broker:
        broker.create_topic("orders", partitions=3)
        ...                       # any client, on broker.bootstrap_servers
        broker.kill()             # kill -9: no flush, no snapshot, connections reset
        broker.restart()          # same port, same data directory: recovery runs
        broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", times=3)   # weir/testing/faults.py

The child is ``python -m weir.broker``, the ``weir`` command itself; its log (stderr) is
kept in ``log_lines``.
"""

from __future__ import annotations

import atexit
import collections
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

from .fault_channel import CHANNEL_LINE, channel_url, control_settings
from .fault_shortcuts import FaultShortcuts
from .settings import PORT_ATTEMPTS, as_properties, free_port

if TYPE_CHECKING:
    from .faults import FaultControl
    from .zygote import ForkedChild, Zygote

READY = "Weir broker ready on"  # the line broker/__main__.py logs once it serves
ADDRESS_IN_USE = "Address already in use"
LOG_LINES_KEPT = 20000

_alive: set[ProcessBroker] = set()  # children a dying interpreter kills, so none outlives its tests


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_alive):
        broker.kill()
    for zygote in _every_zygote:
        zygote.close()


class ChildProcess:
    """What every child-process runner of ours shares (this broker, the tests' Apache Kafka in
    reference/kafka.py): the process, its log lines, kill -9 and a clean stop."""

    process: subprocess.Popen | ForkedChild | None = None
    log_poll_interval = 0.02  # seconds between looks at the log while waiting for a line

    @property
    def lines(self) -> list[str]:
        """The process's log so far, one line per item."""
        raise NotImplementedError

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_contains(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def wait_for_log(self, text: str, timeout: float = 10.0) -> bool:
        """Whether ``text`` appears in the log within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.log_contains(text):
            if time.monotonic() > deadline:
                return False
            time.sleep(self.log_poll_interval)  # a deadline-bounded wait on a log the process writes
        return True

    def tail(self) -> str:
        """The end of the process's log, for error messages."""
        return "".join(self.lines[-40:])

    def await_ready(self, ready: Callable[[], bool], what: str, deadline: float, poll: float) -> None:
        """Poll ``ready`` until it holds; RuntimeError with the log's tail if the process exits or
        ``deadline`` (time.monotonic()) passes, killing it then."""
        while not ready():
            if not self.alive():
                assert self.process is not None
                raise RuntimeError(f"{what} exited with {self.process.returncode}:\n{self.tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"{what} was not ready in time:\n{self.tail()}")
            time.sleep(poll)  # the poll interval of a deadline-bounded readiness check

    def kill(self) -> None:
        """kill -9: no flush, no snapshot, no goodbye; client connections reset."""
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (an operator's clean shutdown), SIGKILL once ``timeout`` passes; the exit code,
        None if the process never ran."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return process.returncode


class BrokerStartError(RuntimeError):
    """The broker exited or did not become ready; the message ends with its log."""


class ProcessBroker(ChildProcess, FaultShortcuts):
    """A Weir broker in a child process; a context manager (``run_broker()`` makes and starts one).

    ``settings``: Kafka broker settings by their dotted names. ``port``: a free one unless
    given. ``data_dir``: a temporary directory removed by ``close()`` unless given. ``args``:
    further command-line arguments (``--feature name=level``); ``env``: added to the broker's
    environment; ``open_files_limit``: the process's RLIMIT_NOFILE; ``log_lines_kept``: how many
    log lines to keep (None: all, so positions in ``lines`` stay valid for a whole test).
    ``faults``: start with fault injection on (``faults``, ``pause()``, ``disk_full()``), its
    control channel on a loopback port with a token of its own.
    """

    def __init__(self, settings: Mapping[str, object] | None = None, *, host: str = "127.0.0.1",
                 port: int | None = None, data_dir: str | Path | None = None, startup_timeout: float = 30.0,
                 args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 open_files_limit: int | None = None, log_lines_kept: int | None = LOG_LINES_KEPT,
                 faults: bool = True):
        self.settings = as_properties(settings)
        self._faults_token = secrets.token_urlsafe(16) if faults else ""
        self._faults_url: str | None = None  # the control channel of the running process
        self.host = host
        self._port_given = port is not None
        self.port = port if port is not None else free_port(host)
        self._own_data_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="weir-"))
        self.startup_timeout = startup_timeout
        self.args = list(args)
        self.env = dict(env or {})
        self.open_files_limit = open_files_limit
        self.log_lines: collections.deque[str] = collections.deque(maxlen=log_lines_kept)
        self.lines_logged = 0  # all lines ever logged (log_lines keeps the last log_lines_kept)
        self.process: subprocess.Popen | ForkedChild | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def log(self) -> str:
        return "".join(self.log_lines)

    @property
    def lines(self) -> list[str]:
        return list(self.log_lines)  # one C-level copy: the reader thread cannot append midway

    def command(self) -> list[str]:
        # -P: the working directory is not put on sys.path, so a folder named like ours cannot shadow weir
        command = [sys.executable, "-P", "-m", "weir.broker", "--host", self.host, "--port", str(self.port),
                   "--data-dir", str(self.data_dir)]
        settings = self.settings
        if self._faults_token:
            settings = {**control_settings(self._faults_token), **settings}
        for name, value in settings.items():
            command += ["--override", f"{name}={value}"]
        return command + self.args

    def start(self) -> ProcessBroker:
        """Start and wait for the ready line; BrokerStartError (with the log) if it exits or times out."""
        if self.alive():
            raise RuntimeError("the broker is running already")
        for attempt in range(1, PORT_ATTEMPTS + 1):
            logged_before = self.lines_logged
            run = self._spawn()
            if run.settled.wait(self.startup_timeout) and run.ready:
                return self
            self.kill()
            this_run = list(self.log_lines)[len(self.log_lines) - (self.lines_logged - logged_before):]
            taken = any(ADDRESS_IN_USE in line for line in this_run)
            if taken and not self._port_given and attempt < PORT_ATTEMPTS:
                self.port = free_port(self.host)  # taken between free_port() and the broker's bind
                continue
            how = "exited" if run.settled.is_set() else f"was not ready in {self.startup_timeout:.0f} s"
            raise BrokerStartError(f"the Weir broker on {self.bootstrap_servers} {how}; its log:\n{self.log}")
        raise AssertionError("unreachable")

    def _spawn(self) -> _Run:
        command = self.command()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        process = _warm_child(command, env, self.open_files_limit) or subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=env, preexec_fn=self._limit_open_files if self.open_files_limit else None)
        self.process = process
        self._faults_url = None
        _alive.add(self)
        # each run has its own readiness: a killed predecessor's reader may end after this one began
        run = _Run(process)
        threading.Thread(target=self._drain, args=(run,), name=f"weir-broker-log-{process.pid}",
                         daemon=True).start()
        return run

    def _limit_open_files(self) -> None:
        assert self.open_files_limit is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files_limit, self.open_files_limit))

    def _drain(self, run: _Run) -> None:
        assert run.process.stderr is not None
        for line in run.process.stderr:
            self.log_lines.append(line)
            self.lines_logged += 1
            if self._faults_token and CHANNEL_LINE in line:
                self._faults_url = channel_url(line)
            if READY in line:
                run.ready = True
                run.settled.set()
        run.process.stderr.close()
        run.settled.set()

    def kill(self) -> None:
        super().kill()
        _alive.discard(self)

    def stop(self, timeout: float = 30.0) -> int | None:
        returncode = super().stop(timeout)
        _alive.discard(self)
        return returncode

    def restart(self) -> ProcessBroker:
        """Start again on the same port and data directory; a running broker is stopped cleanly
        first (call ``kill()`` before for a crash)."""
        self.stop()
        return self.start()

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None) -> str:
        """Create a topic (``config``: topic settings by Kafka name); returns its name."""
        from .topics import create_topic_blocking  # asyncio and the admin client: not on the way to start
        return create_topic_blocking(self.bootstrap_servers, name, partitions, config)

    @property
    def faults(self) -> FaultControl:
        """``error()``, ``delay()``, ``disconnect()``, ``fired()``, ``clear()`` (weir/testing/faults.py)."""
        from .faults import FaultControl
        if not self._faults_token:
            raise RuntimeError("this broker was started without fault injection (faults=False)")
        if self._faults_url is None or not self.alive():
            raise RuntimeError("the broker is not running")
        return FaultControl(self._faults_url, self._faults_token)

    def close(self) -> None:
        """Stop, and remove the data directory if it is a temporary one of ours."""
        self.stop()
        if self._own_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> ProcessBroker:
        return self if self.alive() else self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()


_zygotes: dict[tuple[tuple[str, str], ...], Zygote] = {}  # by the environment their children inherit
_every_zygote: list[Zygote] = []  # closed by _kill_leftovers, after the children they forked
_zygote_lock = threading.Lock()


def start_zygote() -> Zygote | None:
    """The process that forks warm broker children (weir/testing/zygote.py) for this process's
    environment, started if it is not running; it imports the broker meanwhile, so calling this
    early (a test session's start) hides even that. A test that changes what children inherit
    (Spark's PYTHONPATH) gets a zygote of its own. ``WEIR_BROKER_ZYGOTE=0`` turns warm starts off:
    every child is a fresh ``python -m weir.broker``."""
    if os.environ.get("WEIR_BROKER_ZYGOTE", "1") == "0":
        return None
    from .zygote import Zygote, environment_key
    key = environment_key({**os.environ, "PYTHONUNBUFFERED": "1"})
    with _zygote_lock:
        zygote = _zygotes.get(key)
        if zygote is None or not zygote.alive():
            zygote = _zygotes[key] = Zygote()
            _every_zygote.append(zygote)
        return zygote


def _warm_child(command: list[str], env: dict[str, str], open_files_limit: int | None) -> ForkedChild | None:
    """A broker child forked by the zygote for ``command`` (``python [flags] -m weir.broker ...``);
    None where it cannot give one (then Popen does)."""
    if command[0] != sys.executable or "weir.broker" not in command:
        return None
    at = command.index("weir.broker")
    if command[at - 1] != "-m":
        return None
    zygote = start_zygote()
    if zygote is None or not zygote.can_spawn(env):
        return None
    try:
        return zygote.spawn(command[at + 1:], env, open_files_limit)
    except OSError:  # the zygote died (it logs why on the test process's stderr): start cold
        return None


@dataclass(slots=True)
class _Run:
    """One start of the broker process: settled once it is ready or has ended."""

    process: subprocess.Popen | ForkedChild
    ready: bool = False
    settled: threading.Event = field(default_factory=threading.Event)


@contextmanager
def run_broker(settings: Mapping[str, object] | None = None, *, host: str = "127.0.0.1", port: int | None = None,
               data_dir: str | Path | None = None, startup_timeout: float = 30.0,
               faults: bool = True) -> Iterator[ProcessBroker]:
    """A started ``ProcessBroker``, stopped (and its temporary data directory removed) on exit."""
    broker = ProcessBroker(settings, host=host, port=port, data_dir=data_dir, startup_timeout=startup_timeout,
                           faults=faults)
    with broker.start():
        yield broker
