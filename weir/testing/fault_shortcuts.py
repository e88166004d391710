"""``pause()``/``resume()``/``disk_full()``/``disk_ok()`` of the test brokers: shortcuts to their
``faults`` (an in-process table for ``weir.Broker``, the control channel for a child process), kept
free of imports so that a broker class pays nothing for them until a test uses fault injection."""

from __future__ import annotations

from typing import Any


class FaultShortcuts:
    faults: Any  # the broker's fault table or control channel client

    def pause(self) -> None:
        """Stop reading and answering requests (connections stay open; clients time out)."""
        self.faults.pause()

    def resume(self) -> None:
        """Read and answer requests again, those that waited first."""
        self.faults.resume()

    def disk_full(self) -> None:
        """Writes fail with KAFKA_STORAGE_ERROR from now on, as on a full disk; reads go on."""
        self.faults.disk_full()

    def disk_ok(self) -> None:
        """Writes succeed again."""
        self.faults.disk_ok()
