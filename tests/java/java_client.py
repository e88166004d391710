"""Runs our Java client programs (reference/src/main/java/dev/weir/reference/client) and reads
the one JSON object per line each prints on stdout."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time

from confluent_kafka import Consumer, TopicPartition

from reference.kafka import java_command

PACKAGE = "dev.weir.reference.client."


def run(program: str, *args: str, timeout: float = 90) -> list[dict]:
    """Runs ``program`` to its end; its events in order. A non-zero exit fails with its stderr."""
    result = subprocess.run(java_command(PACKAGE + program, *map(str, args)), capture_output=True, text=True,
                            timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"{program} exited with {result.returncode}:\n{result.stdout}\n{result.stderr[-6000:]}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def only(events: list[dict], name: str) -> dict:
    found = [event for event in events if event["event"] == name]
    assert len(found) == 1, (name, events)
    return found[0]


class JavaProcess:
    """A long-running program whose events arrive on a queue as it prints them."""

    def __init__(self, program: str, *args: str):
        self.process = subprocess.Popen(java_command(PACKAGE + program, *map(str, args)), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[dict] = []
        self._arrived: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                self.events.append(event)
                self._arrived.put(event)

    def wait_for(self, predicate, timeout: float = 60) -> dict:
        """The first event from now on (or already seen) for which ``predicate`` holds."""
        for event in list(self.events):
            if predicate(event):
                return event
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.process.poll() is not None and self._arrived.empty():
                raise AssertionError(f"no such event; saw {self.events[-20:]}\n{self.process.stderr.read()[-4000:]}"
                                     if self.process.poll() is not None else f"no such event; saw {self.events[-20:]}")
            try:
                event = self._arrived.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if predicate(event):
                return event

    def stop(self, timeout: float = 30) -> None:
        """Asks the program to finish (a "stop" line), waits for it and for its last output; a program
        that had died on its own (an exception out of main) fails the test with its stderr."""
        if self.process.poll() is None:
            self.process.stdin.write("stop\n")
            self.process.stdin.flush()
            self.process.stdin.close()
        self.process.wait(timeout)
        self._reader.join(timeout)
        assert self.process.returncode == 0, \
            f"exit code {self.process.returncode}: {self.process.stderr.read()[-4000:]}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed",
             timeout: float = 30) -> dict[int, list]:
    """Every record of ``topic`` up to its end (the LSO for read_committed), per partition, with confluent-kafka."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "java-suite-reader",
                         "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(partitions)])
    records: dict[int, list] = {partition: [] for partition in range(partitions)}
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            for message in consumer.consume(100, timeout=0.2):
                if message.error():
                    at_end.add(message.partition())
                    continue
                records[message.partition()].append(message)
    finally:
        consumer.close()
    assert len(at_end) == partitions, f"only partitions {sorted(at_end)} reached their end"
    return records
