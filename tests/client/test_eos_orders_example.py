"""The exactly-once example on our client (examples/exactly_once_orders_weir.py) through kill -9
of itself and of the broker, against Weir and against Apache Kafka.

A feeder writes numbered orders until the end of the test, so the processor always has
input (and a transaction open); the processor is killed with -9 three times, each time while
its transaction has output written, and restarted; then the broker is killed -9 once under
the running processor. Afterwards every order has
exactly one confirmation and one inventory update under read_committed, each customer's
confirmations are in order, and the group's committed offsets are the end of the input.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.broker_process import REPO
from tests.support.waiting import wait_until
from tests.integration.test_eos_pipeline import GROUP, PARTITIONS, OutputWatermarks, read_committed
from tests.integration.test_eos_pipeline import ProcessorProcess

EXAMPLE = REPO / "examples" / "exactly_once_orders_weir.py"
sys.path.insert(0, str(EXAMPLE.parent))
import exactly_once_orders_weir as example  # noqa: E402


class Feeder(threading.Thread):
    """Writes orders at a steady pace until stopped, with an idempotent producer (retrying across
    the broker kill): the stream never runs dry while processors are killed."""

    def __init__(self, bootstrap: str):
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.written = 0
        self.failed: list = []
        self.stopping = threading.Event()

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})
        while not self.stopping.is_set():
            for _ in range(10):
                key, value = example.order(self.written)
                producer.produce(example.ORDERS, value, key,
                                 on_delivery=lambda err, _msg: err and self.failed.append(err))
                self.written += 1
            producer.poll(0)
            time.sleep(0.05)
        if producer.flush(120):
            self.failed.append("unflushed")


def test_exactly_once_through_processor_and_broker_kills(any_broker_to_kill):
    broker = any_broker_to_kill
    asyncio.run(example.create_topics(broker.bootstrap, PARTITIONS))
    processors: list[ProcessorProcess] = []
    feeder = Feeder(broker.bootstrap)
    try:
        feeder.start()
        watermarks = OutputWatermarks(broker.bootstrap)
        for kill_after in (300, 900, 1500):
            processor = ProcessorProcess(broker.bootstrap, script=EXAMPLE)
            processors.append(processor)
            earlier = sum(p.committed for p in processors[:-1])
            wait_until(lambda: processor.committed >= kill_after - earlier,
                       f"the processor to commit {kill_after} orders: {''.join(processor.lines[-5:])}", 90)
            wait_until(watermarks.transaction_open, "a transaction with output written", 10)
            processor.kill()
        processor = ProcessorProcess(broker.bootstrap, script=EXAMPLE)
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
        input_end = sum(consumer.get_watermark_offsets(TopicPartition(example.ORDERS, p), timeout=10)[1]
                        for p in range(PARTITIONS))
        assert input_end == total  # the idempotent feeder wrote each order once

        def committed_total() -> int:
            got = consumer.committed([TopicPartition(example.ORDERS, p) for p in range(PARTITIONS)], timeout=10)
            return sum(max(tp.offset, 0) for tp in got)

        # the processor that was running when the broker died carries on by itself
        wait_until(lambda: committed_total() == input_end,
                   f"the group's offsets to reach the end of input: {''.join(processor.lines[-10:])}", 120)
        consumer.close()
        watermarks.close()
        processor.stop()

        confirmations = read_committed(broker.bootstrap, example.CONFIRMATIONS)
        updates = read_committed(broker.bootstrap, example.INVENTORY)
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
