"""The exactly-once examples (examples/exactly_once_orders.py on confluent-kafka, and its twin
exactly_once_orders_weir.py on our client) through kill -9 of the processor and of the broker:
one test, each example on Weir, ours also on Apache Kafka, and each also with
group.protocol=consumer (KIP-848: the offsets sent to the transaction carry the member epoch, which
the broker checks on TxnOffsetCommit).

A feeder writes numbered orders until the end of the test, so the processor always has
input (and a transaction open); the processor is killed with -9 three times, each time while
its transaction has output written, and restarted; then the broker is killed -9 once under
the running processor. Afterwards every order has exactly one confirmation and one inventory
update under read_committed, each customer's confirmations are in order, and the group's
committed offsets are the end of the input.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from reference.kafka import SHARED_TEST_SETTINGS
from tests.broker_process import REPO, BrokerProcess
from tests.support.waiting import wait_until

sys.path.insert(0, str(REPO / "examples"))
import exactly_once_orders  # noqa: E402
import exactly_once_orders_weir  # noqa: E402

EXAMPLES = {"confluent-kafka": (REPO / "examples" / "exactly_once_orders.py", exactly_once_orders),
            "our-client": (REPO / "examples" / "exactly_once_orders_weir.py", exactly_once_orders_weir)}
ORDERS, CONFIRMATIONS, INVENTORY = exactly_once_orders.ORDERS, exactly_once_orders.CONFIRMATIONS, \
    exactly_once_orders.INVENTORY
assert (ORDERS, CONFIRMATIONS, INVENTORY) == (exactly_once_orders_weir.ORDERS, exactly_once_orders_weir.CONFIRMATIONS,
                                              exactly_once_orders_weir.INVENTORY)
PARTITIONS = 3
GROUP = "order-processor"
#: A consumer-protocol member killed with -9 holds its partitions, and its instance id, until its
#: session ends on the broker (group.consumer.session.timeout.ms; Kafka's floor is 45 s): the
#: broker of the consumer-protocol run lets it be 10 s, as the classic runs' session.timeout.ms.
CONSUMER_PROTOCOL_SESSION = {"group.consumer.min.session.timeout.ms": "6000",
                             "group.consumer.session.timeout.ms": "10000"}


class ProcessorProcess:
    """One run of an orders processor (``script``: one of the two examples)."""

    def __init__(self, bootstrap: str, script: Path, protocol: str = "classic"):
        options = ["--session-timeout-ms", "10000"] if protocol == "classic" else ["--group-protocol", protocol]
        self.process = subprocess.Popen(
            [sys.executable, str(script), "--bootstrap", bootstrap, "--partitions", str(PARTITIONS), "process",
             *options],
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
    """Writes orders at a steady pace until stopped, with an idempotent producer (retrying across
    the broker kill): the stream never runs dry while processors are killed."""

    def __init__(self, bootstrap: str, example):
        super().__init__(daemon=True)
        self.example = example
        self.bootstrap = bootstrap
        self.written = 0
        self.failed: list = []
        self.stopping = threading.Event()

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        while not self.stopping.is_set():
            for _ in range(10):
                key, value = self.example.order(self.written)
                producer.produce(self.example.ORDERS, value, key,
                                 on_delivery=lambda err, _msg: err and self.failed.append(err))
                self.written += 1
            producer.poll(0)
            time.sleep(0.05)
        if producer.flush(120):
            self.failed.append("unflushed")


class OutputWatermarks:
    """Compares an output topic's high watermark with its last stable offset (ListOffsets under both isolations)."""

    def __init__(self, bootstrap: str):
        isolations = ("read_uncommitted", "read_committed")
        self.readers = [Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks",
                                  "isolation.level": isolation}) for isolation in isolations]

    def transaction_open(self) -> bool:
        """Output written by a transaction not yet ended: the processor is inside one."""
        for p in range(PARTITIONS):
            tp = TopicPartition(CONFIRMATIONS, p)
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


@pytest.mark.parametrize("client, kind, protocol", [
    ("confluent-kafka", "weir", "classic"), ("our-client", "weir", "classic"), ("our-client", "kafka", "classic"),
    ("confluent-kafka", "weir", "consumer"), ("our-client", "weir", "consumer")])
def test_exactly_once_through_processor_and_broker_kills(client, kind, protocol, request, tmp_path):
    if kind == "kafka":
        broker = request.getfixturevalue("kafka_broker_to_kill")
    else:  # a broker of its own: the examples' topic and group names are fixed
        overrides = {**SHARED_TEST_SETTINGS, **(CONSUMER_PROTOCOL_SESSION if protocol == "consumer" else {})}
        broker = BrokerProcess(tmp_path / "data", overrides=overrides).start()
        request.addfinalizer(broker.stop)
    script, example = EXAMPLES[client]
    created = example.create_topics(broker.bootstrap, PARTITIONS)
    if asyncio.iscoroutine(created):  # our client's example is async
        asyncio.run(created)
    processors: list[ProcessorProcess] = []
    feeder = Feeder(broker.bootstrap, example)
    try:
        feeder.start()
        watermarks = OutputWatermarks(broker.bootstrap)
        # the consumer-protocol run kills twice, to keep the suite's time: each kill costs a session
        for kill_after in (300, 900, 1500) if protocol == "classic" else (300, 900):
            processor = ProcessorProcess(broker.bootstrap, script, protocol)
            processors.append(processor)
            target = kill_after - sum(p.committed for p in processors[:-1])
            wait_until(lambda run=processor, target=target: run.committed >= target,
                       f"the processor to commit {kill_after} orders: {''.join(processor.lines[-5:])}", 90)
            wait_until(watermarks.transaction_open, "a transaction with output written", 10)
            processor.kill()
        processor = ProcessorProcess(broker.bootstrap, script, protocol)
        processors.append(processor)
        wait_until(lambda: processor.committed > 100, "the processor to get going again", 90)
        broker.kill()  # with the processor running, most likely inside a transaction
        broker.start()
        after_restart = processor.committed
        wait_until(lambda: processor.committed > after_restart + 100, "the processor to go on after the restart", 90)
        feeder.stopping.set()
        feeder.join(180)
        assert not feeder.is_alive() and not feeder.failed
        total = feeder.written

        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
        input_end = sum(consumer.get_watermark_offsets(TopicPartition(ORDERS, p), timeout=10)[1]
                        for p in range(PARTITIONS))
        assert input_end == total  # the idempotent feeder wrote each order once

        def committed_total() -> int:
            got = consumer.committed([TopicPartition(ORDERS, p) for p in range(PARTITIONS)], timeout=10)
            return sum(max(tp.offset, 0) for tp in got)

        # the processor that was running when the broker died carries on by itself
        wait_until(lambda: committed_total() == input_end,
                   f"the group's offsets to reach the end of input: {''.join(processor.lines[-10:])}", 120)
        consumer.close()
        watermarks.close()
        processor.stop()

        confirmations = read_committed(broker.bootstrap, CONFIRMATIONS)
        updates = read_committed(broker.bootstrap, INVENTORY)
        assert sorted(c["order_id"] for _key, c in confirmations) == list(range(total))
        assert sorted(u["order_id"] for _key, u in updates) == list(range(total))
        per_customer: dict[bytes, list[int]] = {}
        for key, confirmation in confirmations:
            per_customer.setdefault(key, []).append(confirmation["order_id"])
        assert all(ids == sorted(ids) for ids in per_customer.values())
    finally:
        feeder.stopping.set()
        for p in processors:
            if p.process.poll() is None:
                p.kill()
