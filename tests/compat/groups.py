"""Test harness for consumer groups: members in their own processes (``group_member.py``)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

from confluent_kafka import Producer

from tests.broker_process import REPO

# members ask for a 3 s session so a dead one is noticed quickly; Kafka's minimum is 6 s
GROUP_SETTINGS = {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "0"}


class Member:
    def __init__(self, client: str, bootstrap: str, group: str, topic: str, instance: str = "",
                 session_ms: int = 3000):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.compat.group_member", client, bootstrap, group, topic, instance,
             str(session_ms)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.assignment: set[int] | None = None
        self.records: list[tuple[int, int, str]] = []
        self.committed: dict[int, int] = {}
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            kind, _, rest = line.strip().partition(" ")
            if kind == "A":
                self.assignment = {int(p) for p in rest.split(",") if p}
            elif kind == "R":
                partition, offset, value = rest.split(" ", 2)
                self.records.append((int(partition), int(offset), value))
            elif kind == "C":
                partition, offset = rest.split()
                self.committed[int(partition)] = int(offset)
            elif kind == "closed":
                self.closed = True

    def leave(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(20)
        assert self.closed, "the member did not close cleanly"

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)


def shares(members: list[Member], partitions: int) -> bool:
    """The members' assignments are disjoint and together cover every partition."""
    owned = [m.assignment or set() for m in members]
    return sum(len(a) for a in owned) == partitions and set().union(*owned) == set(range(partitions))


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + per_partition):
        for p in range(partitions):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(20) == 0
