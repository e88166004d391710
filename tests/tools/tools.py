"""Kafka's own command-line tools and test programs, run unmodified (from the reference
classpath) against either broker."""

from __future__ import annotations

import json
import subprocess
import threading
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient, NewTopic

from reference.kafka import java_command

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"  # in kafka-tools since 4.4 (4.3 shipped it in kafka_2.13, Scala)
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
COPIER = "org.apache.kafka.tools.TransactionalMessageCopier"


def create_topics(bootstrap: str, *topics: NewTopic) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until every future is done
    for future in admin.create_topics(list(topics)).values():
        future.result(30)


class ToolRunner:
    """One JVM (dev.weir.reference.ToolRunner) that runs tool after tool, so the suite pays
    for JVM start-up and class loading once instead of once per command. A tool that hangs
    past its timeout takes the JVM with it; the next call starts a new one."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def run(self, main_class: str, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess:
        fields = [main_class, *args]
        assert not any("\t" in field or "\n" in field for field in fields), fields
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self.process = subprocess.Popen(java_command("dev.weir.reference.ToolRunner"), stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE)
            process = self.process
            process.stdin.write(("\t".join(fields) + "\n").encode())
            process.stdin.flush()
            timer = threading.Timer(timeout, process.kill)  # unblocks the reads below
            timer.start()
            try:
                header = process.stdout.readline().decode().split()
                if len(header) != 4 or header[0] != "EXIT":
                    process.kill()
                    raise subprocess.TimeoutExpired([main_class, *args], timeout)
                status, out_size, err_size = map(int, header[1:])
                out = process.stdout.read(out_size).decode(errors="replace")
                err = process.stdout.read(err_size).decode(errors="replace")
            finally:
                timer.cancel()
            return subprocess.CompletedProcess([main_class, *args], status, out, err)


_runner = ToolRunner()


def run_tool(main_class: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """The tool's exit status, stdout and stderr (its log lines go to stderr), as if it had
    run as its own command."""
    return _runner.run(main_class, args, timeout)


def table(stdout: str) -> list[dict[str, str]]:
    """Rows of a tool's table (the first non-blank line that is not a note is the header): cells
    between tabs, or, in a space-aligned table, cut at the header's column starts, since a cell may be empty (the
    shared Kafka of a
    test session can hold a group with the empty id, which Kafka accepts)."""
    lines = [line for line in stdout.splitlines() if line.strip() and not line.startswith(("Consumer group ", "Error"))]
    if not lines:
        return []
    header = lines[0]
    if "\t" in header:  # kafka-transactions: padded cells between tabs
        names = [name.strip() for name in header.split("\t")]
        return [dict(zip(names, (cell.strip() for cell in line.split("\t")), strict=False)) for line in lines[1:]]
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    bounds = list(zip(starts, starts[1:] + [None], strict=False))
    names = [header[start:end].strip() for start, end in bounds]
    return [{name: line[start:end].strip() for name, (start, end) in zip(names, bounds, strict=False)}
            for line in lines[1:]]


@dataclass
class Copier:
    """One TransactionalMessageCopier process; a thread reads its JSON status lines."""

    bootstrap: str
    index: int
    args: list[str]
    process: subprocess.Popen | None = None
    remaining: int = -1
    consumed: int = 0
    finished: threading.Event = field(default_factory=threading.Event)
    starts: int = 0
    stderr_tail: list[str] = field(default_factory=list)

    def start(self) -> None:
        self.remaining = -1
        self.starts += 1
        self.process = subprocess.Popen(java_command(COPIER, *self.args), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        threading.Thread(target=self._drain_stderr, args=(self.process,), daemon=True).start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            try:
                status = json.loads(line)
            except ValueError:
                continue
            self.remaining, self.consumed = int(status["remaining"]), int(status["totalProcessed"])
            if self.remaining == 0:
                self.finished.set()

    def _drain_stderr(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            self.stderr_tail = (self.stderr_tail + [line])[-40:]

    def kill(self) -> None:
        """kill -9, as the system test's hard bounce does."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None
