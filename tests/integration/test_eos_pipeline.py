"""The exactly-once example (examples/exactly_once_orders.py) through kill -9 of itself and of the broker.

A feeder writes a numbered stream of orders while the processor runs; the
processor is killed with -9 three times mid-stream, each time while its
transaction has output written, and restarted; then the broker is killed
once under the running processor. Afterwards every order has exactly one confirmation and
one inventory update under read_committed, each customer's confirmations are
in order, and the group's committed offsets are the end of the input.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker_process import REPO, BrokerProcess
from tests.support.waiting import wait_until

EXAMPLE = REPO / "examples" / "exactly_once_orders.py"
ORDERS_TOTAL = 3000
PARTITIONS = 3
GROUP = "order-processor"
sys.path.insert(0, str(EXAMPLE.parent))
import exactly_once_orders as example  # noqa: E402


class ProcessorProcess:
    """One run of an orders processor (``script``: this example, or its twin on our client)."""

    def __init__(self, bootstrap: str, script=EXAMPLE):
        self.process = subprocess.Popen(
            [sys.executable, str(script), "--bootstrap", bootstrap, "--partitions", str(PARTITIONS), "process",
             "--session-timeout-ms", "10000"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.committed = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("committed "):
                self.committed += int(line.split()[1])

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        self.process.terminate()
        assert self.process.wait(60) == 0, "".join(self.lines[-30:])


class Feeder(threading.Thread):
    """Writes the orders over a few seconds with an idempotent producer (which retries across the broker kill)."""

    def __init__(self, bootstrap: str):
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.written = 0
        self.failed: list = []

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        for number in range(ORDERS_TOTAL):
            key, value = example.order(number)
            producer.produce(example.ORDERS, value, key,
                             on_delivery=lambda err, _msg: err and self.failed.append(err))
            self.written += 1
            producer.poll(0)
            if number % 50 == 49:
                time.sleep(0.05)  # a stream, not one burst: the kills below land mid-stream
        if producer.flush(120):
            self.failed.append("unflushed")


class OutputWatermarks:
    """Compares an output topic's high watermark with its last stable offset (ListOffsets under both isolations)."""

    def __init__(self, bootstrap: str):
        self.readers = [Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks",
                                  "isolation.level": isolation}) for isolation in ("read_uncommitted", "read_committed")]

    def transaction_open(self) -> bool:
        """Output written by a transaction not yet ended: the processor is inside one."""
        for p in range(PARTITIONS):
            tp = TopicPartition(example.CONFIRMATIONS, p)
            high, stable = (reader.get_watermark_offsets(tp, timeout=5, cached=False)[1] for reader in self.readers)
            if high > stable:
                return True
        return False

    def close(self) -> None:
        for reader in self.readers:
            reader.close()


def read_committed(bootstrap: str, topic: str) -> list[tuple[bytes, dict]]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "checker", "isolation.level": "read_committed",
                       "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    reader.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    ends = {p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    positions = dict.fromkeys(range(PARTITIONS), 0)
    out = []
    deadline = time.monotonic() + 60
    while any(positions[p] < ends[p] for p in positions) and time.monotonic() < deadline:
        for message in reader.consume(1000, timeout=0.2):
            if message.error():
                continue
            out.append((message.key(), json.loads(message.value())))
            positions[message.partition()] = message.offset() + 1
        for p in positions:  # aborted records and markers at the end leave the position short of the end
            tp = reader.position([TopicPartition(topic, p)])[0]
            if tp.offset >= 0:
                positions[p] = max(positions[p], tp.offset)
    reader.close()
    return out


def test_exactly_once_through_processor_and_broker_kills(tmp_path):
    broker = BrokerProcess(tmp_path / "data", overrides={"group.initial.rebalance.delay.ms": "0"}).start()
    processors: list[ProcessorProcess] = []
    try:
        example.create_topics(broker.bootstrap, PARTITIONS)
        feeder = Feeder(broker.bootstrap)
        feeder.start()
        watermarks = OutputWatermarks(broker.bootstrap)
        for kill_after in (300, 900, 1500):
            processor = ProcessorProcess(broker.bootstrap)
            processors.append(processor)
            wait_until(lambda: processor.committed >= kill_after - processors_total(processors[:-1]),
                       f"the processor to commit {kill_after} orders", 60)
            wait_until(watermarks.transaction_open, "a transaction with output written", 10)
            processor.kill()
        processor = ProcessorProcess(broker.bootstrap)
        processors.append(processor)
        wait_until(lambda: processor.committed > 100, "the processor to get going again", 60)
        broker.kill()  # with the processor running, most likely inside a transaction
        broker.start()
        feeder.join(180)
        assert not feeder.is_alive() and not feeder.failed and feeder.written == ORDERS_TOTAL

        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
        input_end = sum(consumer.get_watermark_offsets(TopicPartition(example.ORDERS, p), timeout=10)[1]
                        for p in range(PARTITIONS))
        assert input_end == ORDERS_TOTAL  # the idempotent feeder wrote each order once

        def committed_total() -> int:
            got = consumer.committed([TopicPartition(example.ORDERS, p) for p in range(PARTITIONS)], timeout=10)
            return sum(max(tp.offset, 0) for tp in got)

        # the processor that was running when the broker died carries on by itself
        wait_until(lambda: committed_total() == input_end, "the group's offsets to reach the end of input", 120)
        consumer.close()
        watermarks.close()
        processor.stop()

        confirmations = read_committed(broker.bootstrap, example.CONFIRMATIONS)
        updates = read_committed(broker.bootstrap, example.INVENTORY)
        assert sorted(c["order_id"] for _key, c in confirmations) == list(range(ORDERS_TOTAL))
        assert sorted(u["order_id"] for _key, u in updates) == list(range(ORDERS_TOTAL))
        per_customer: dict[bytes, list[int]] = {}
        for key, confirmation in confirmations:
            per_customer.setdefault(key, []).append(confirmation["order_id"])
        assert all(ids == sorted(ids) for ids in per_customer.values())
        # the kills did land inside transactions: a restarted processor's init aborted them
        assert broker.log_contains("the id was initialised again")
    finally:
        for p in processors:
            if p.process.poll() is None:
                p.kill()
        broker.stop()


def processors_total(processors: list[ProcessorProcess]) -> int:
    return sum(p.committed for p in processors)
