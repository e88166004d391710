"""Runs the real broker as a child process for integration and compatibility tests."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from weir.testing.settings import free_port

READY = "Weir broker ready on"
FAST_ONLY = "WEIR_TEST_FAST"  # set by make test-fast, whose tests must start no broker process
REPO = Path(__file__).resolve().parent.parent


class BrokerProcess:
    """``start()`` waits for the ready line; the log is kept for assertions."""

    kind = "weir"

    def __init__(self, data_dir: Path, port: int | None = None, overrides: dict[str, str] | None = None,
                 open_files_limit: int | None = None, args: list[str] | None = None,
                 env: dict[str, str] | None = None):
        self.data_dir = Path(data_dir)
        self.args = list(args or [])  # further command-line arguments, e.g. --feature name=level
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.open_files_limit = open_files_limit  # RLIMIT_NOFILE (soft and hard) of the broker process
        self.env = dict(env or {})  # added to the broker's environment
        self.process: subprocess.Popen | None = None
        self.lines: list[str] = []
        self._ready = threading.Event()

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "weir.broker", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        for name, value in self.overrides.items():
            cmd += ["--override", f"{name}={value}"]
        return cmd + self.args

    def start(self, timeout: float = 20.0) -> "BrokerProcess":
        if os.environ.get(FAST_ONLY):
            raise RuntimeError(f"{FAST_ONLY} is set (make test-fast): this test starts a broker process, "
                               "so it belongs to make test, not to the fast set in the Makefile")
        self._ready.clear()
        self.process = subprocess.Popen(self.command(), cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                                        preexec_fn=self._limit_open_files if self.open_files_limit else None)
        threading.Thread(target=self._drain, args=(self.process,), daemon=True).start()
        if not self._ready.wait(timeout):
            self.kill()
            raise RuntimeError("broker did not become ready:\n" + "".join(self.lines[-30:]))
        return self

    def _limit_open_files(self) -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files_limit, self.open_files_limit))

    def open_files(self, under: Path | None = None) -> int:
        """Descriptors the broker process holds (per /proc), optionally only files under ``under``."""
        count = 0
        fd_dir = f"/proc/{self.process.pid}/fd"
        for fd in os.listdir(fd_dir):
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:  # closed meanwhile
                continue
            if under is None or target.startswith(str(under)):
                count += 1
        return count

    def _drain(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            self.lines.append(line)
            if READY in line:
                self._ready.set()

    def log_contains(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def wait_for_log(self, text: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log_contains(text):
                return True
            time.sleep(0.02)
        return False

    def kill(self) -> None:
        """kill -9: no flush, no snapshot, no goodbye."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 15.0) -> int:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            return self.process.wait(timeout)
        return self.process.returncode if self.process else 0

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None
