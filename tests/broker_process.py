"""The tests' broker runner: ``weir.testing``'s ProcessBroker under the names the suites use.

One runner for the plugin and the tests (issue 18): this subclass only adds the tests' spelling
(``BrokerProcess(data_dir, port, overrides)``, ``bootstrap``, ``overrides``), keeps every log
line, counts the broker's open descriptors, and refuses to start under ``make test-fast``.
"""

from __future__ import annotations

import os
from pathlib import Path

from weir.testing.process import READY, ProcessBroker
from weir.testing.settings import free_port

FAST_ONLY = "WEIR_TEST_FAST"  # set by make test-fast, whose tests must start no broker process
REPO = Path(__file__).resolve().parent.parent

__all__ = ["FAST_ONLY", "READY", "REPO", "BrokerProcess", "free_port"]


class BrokerProcess(ProcessBroker):
    """``start()`` waits for the ready line; every log line is kept for assertions."""

    kind = "weir"

    def __init__(self, data_dir: Path, port: int | None = None, overrides: dict[str, str] | None = None,
                 open_files_limit: int | None = None, args: list[str] | None = None,
                 env: dict[str, str] | None = None, faults: bool = False):
        # faults: off unless asked, so the suites' brokers run as a plain `weir` start does
        super().__init__(overrides, port=port, data_dir=data_dir, args=args or (), env=env,
                         open_files_limit=open_files_limit, log_lines_kept=None, faults=faults)

    @property
    def bootstrap(self) -> str:
        return self.bootstrap_servers

    @property
    def overrides(self) -> dict[str, str]:
        """The broker settings, as --override flags; a change applies from the next start."""
        return self.settings

    def start(self, timeout: float = 20.0) -> BrokerProcess:
        if os.environ.get(FAST_ONLY):
            raise RuntimeError(f"{FAST_ONLY} is set (make test-fast): this test starts a broker process, "
                               "so it belongs to make test, not to the fast set in the Makefile")
        self.startup_timeout = timeout
        super().start()
        return self

    def open_files(self, under: Path | None = None) -> int:
        """Descriptors the broker process holds (per /proc), optionally only files under ``under``."""
        count = 0
        fd_dir = f"/proc/{self.pid}/fd"
        for fd in os.listdir(fd_dir):
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:  # closed meanwhile
                continue
            if under is None or target.startswith(str(under)):
                count += 1
        return count
