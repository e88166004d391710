"""A mounted ``lazyfs`` (tests/support/lazyfs.py) for a test: its power cuts, its counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MOUNT_TIMEOUT_S = 20


class LazyMount:
    """``with LazyMount(path) as disk:`` mounts a lazy filesystem at ``path`` (made if missing)."""

    def __init__(self, mountpoint: Path):
        self.mountpoint = Path(mountpoint)
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> LazyMount:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen([sys.executable, "-m", "tests.support.lazyfs", str(self.mountpoint)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=Path(__file__).resolve().parents[2])
        line = self.process.stdout.readline()  # "ready", or nothing if the mount failed
        if line.strip() != "ready" or not os.path.ismount(self.mountpoint):
            self.__exit__()
            raise RuntimeError(f"lazyfs did not mount at {self.mountpoint} (exit {self.process.poll()})")
        return self

    def _ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def cut(self, seed: int = 0) -> dict:
        """The power cut: call it once whatever wrote to the mount is dead."""
        return self._ask(f"cut {seed}")

    def stats(self) -> dict:
        return self._ask("stats")

    def slow(self, latency_ms: int) -> dict:
        """Every write and fsync takes ``latency_ms`` more from now on (0: full speed again)."""
        return self._ask(f"slow {latency_ms}")

    def __exit__(self, *exc_info) -> None:
        subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], check=False,
                       stderr=subprocess.DEVNULL)
        if self.process is not None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=MOUNT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
