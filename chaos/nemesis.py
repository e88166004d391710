"""The faults the chaos campaign applies, one at a time, at random intervals: broker kill -9 and
restart, a pause, a storm of injected retriable errors, a full disk, a client killed -9, and when
the data directory is on the FUSE test filesystem (tests/support/lazyfs.py) a slow disk and a power
cut: the broker killed -9 and every write it did not fsync dropped (but a random prefix of each
file's unsynced writes, the last torn), then the broker restarted on what is left.

Every fault goes through the broker's own controls (weir.testing: ``kill()``, ``restart()``,
``pause()``, ``faults.error()``, ``disk_full()``), so what the clients meet is what a real broker
gives them. ``Nemesis.applied`` is the log of what was done and when (seconds since the start).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from weir.testing import ProcessBroker

if TYPE_CHECKING:
    from tests.support.power import LazyMount

#: Errors a real Kafka answers now and then and clients retry: (API, error).
STORMS = (("Produce", "NOT_LEADER_OR_FOLLOWER"), ("Fetch", "NOT_LEADER_OR_FOLLOWER"),
          ("EndTxn", "CONCURRENT_TRANSACTIONS"), ("AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS"),
          ("TxnOffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS"), ("InitProducerId", "COORDINATOR_LOAD_IN_PROGRESS"),
          ("FindCoordinator", "COORDINATOR_NOT_AVAILABLE"), ("Heartbeat", "REBALANCE_IN_PROGRESS"))
KINDS = ("kill", "pause", "errors", "disk_full", "client_kill", "slow_disk", "power_cut")
ON_THE_FUSE_DISK = ("slow_disk", "power_cut")


class Nemesis:
    def __init__(self, broker: ProcessBroker, kill_client: Callable[[random.Random], str | None],
                 rng: random.Random, kinds: tuple[str, ...] = KINDS,
                 disk: LazyMount | None = None):
        self.broker = broker
        self.disk = disk  # the FUSE disk the data directory is on: its latency and its power cuts
        self.kill_client = kill_client
        self.rng = rng
        self.kinds = kinds
        self.started = time.monotonic()
        self.applied: list[dict[str, Any]] = []
        self._deck: list[str] = []

    def strike(self) -> None:
        if not self._deck:  # every kind once per round, in a random order: a short run meets them all
            self._deck = self.rng.sample(self.kinds, len(self.kinds))
        kind = self._deck.pop()
        at = round(time.monotonic() - self.started, 2)
        detail: dict[str, Any] = {}
        if kind == "kill":
            self.broker.kill()
            self.broker.restart()
        elif kind == "pause":
            detail["seconds"] = seconds = round(self.rng.uniform(1, 4), 1)
            self.broker.pause()
            time.sleep(seconds)  # the fault is the time the broker answers nothing
            self.broker.resume()
        elif kind == "errors":
            storm = self.rng.sample(STORMS, 3)
            for api, code in storm:
                self.broker.faults.error(api, code, times=self.rng.randint(1, 5))
            detail["errors"] = [f"{api}:{code}" for api, code in storm]
        elif kind == "disk_full":
            detail["seconds"] = seconds = round(self.rng.uniform(1, 3), 1)
            self.broker.disk_full()
            time.sleep(seconds)
            self.broker.disk_ok()
        elif kind == "slow_disk":
            assert self.disk is not None, "slow_disk needs the data directory on the FUSE disk (--fuse)"
            detail["seconds"] = seconds = round(self.rng.uniform(2, 5), 1)
            detail["latency_ms"] = latency_ms = self.rng.randint(20, 100)
            self.disk.slow(latency_ms)
            time.sleep(seconds)
            self.disk.slow(0)
        elif kind == "power_cut":
            assert self.disk is not None, "power_cut needs the data directory on the FUSE disk (--fuse)"
            self.broker.kill()
            detail.update(self.disk.cut(self.rng.randrange(1 << 30)))
            self.broker.restart()
        else:
            detail["client"] = self.kill_client(self.rng)
        self.applied.append({"t": at, "fault": kind, **detail})

    def heal(self) -> None:
        """Every switch back on, and the broker running."""
        if not self.broker.alive():
            self.broker.restart()
        self.broker.resume()
        self.broker.disk_ok()
        self.broker.faults.clear()
