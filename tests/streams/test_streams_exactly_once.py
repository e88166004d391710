"""A Kafka Streams application with processing.guarantee=exactly_once_v2 through kill -9 of
itself and of the broker, against Weir and against Apache Kafka.

The application (reference/src/main/java/dev/weir/reference/streams/OrdersStreams.java)
turns orders into one confirmation each (stateless) and per-product inventory totals
(through a repartition topic into a store with a changelog). A feeder writes the orders as a
stream while the application is killed with -9 twice, restarted from the same state
directory each time, and the broker is killed with -9 once under it. Afterwards the output
is exactly what one clean run gives: one confirmation per order, and each product's last
total equal to the sum of its orders, every total on the way rising (an order counted twice
would push the last total past the sum; a store restored from a changelog that lost an
update would show a total going back).

It runs on both of Kafka Streams' group protocols: classic (JoinGroup/SyncGroup, one instance at a
time) and streams (KIP-1071's StreamsGroupHeartbeat, the broker assigning the tasks), where two
instances share the work, each killed -9 in turn and replaced from its own state directory, and
the group is listed as a streams group.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid

import asyncio

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.waiting import wait_until
from reference.kafka import java_command
from weir.client import Admin

ORDERS_TOTAL = 4000
PARTITIONS = 3
PRODUCTS = 7


def order(number: int) -> tuple[str, str]:
    return f"order-{number}", f"customer-{number % 11},product-{number % PRODUCTS},{1 + number % 5}"


class StreamsApp:
    """One run of OrdersStreams; ``running`` is set when Kafka Streams reports RUNNING."""

    def __init__(self, bootstrap: str, application_id: str, state_dir, topics: Topics, group_protocol: str):
        self.process = subprocess.Popen(
            java_command("dev.weir.reference.streams.OrdersStreams", bootstrap, application_id, str(state_dir),
                         topics.orders, topics.confirmations, topics.totals, group_protocol),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.running = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if line.strip() == "STATE RUNNING":
                self.running.set()
            elif line.startswith("STATE "):
                self.running.clear()

    def wait_running(self, timeout: float = 90) -> None:
        assert self.running.wait(timeout), "Kafka Streams did not reach RUNNING:\n" + "".join(self.lines[-40:])

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def terminate(self) -> None:
        """SIGTERM: the shutdown hook closes Kafka Streams; the JVM then exits 128 + SIGTERM."""
        self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self) -> None:
        assert self.process.wait(60) == 128 + signal.SIGTERM, "".join(self.lines[-40:])
        self.reader.join(10)  # the last lines may still be in the pipe
        assert "CLOSED true\n" in self.lines, "".join(self.lines[-40:])


class Topics:
    def __init__(self) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.orders = f"streams-orders-{suffix}"
        self.confirmations = f"streams-confirmations-{suffix}"
        self.totals = f"streams-totals-{suffix}"

    def create(self, bootstrap: str) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([NewTopic(name, PARTITIONS, 1)
                                       for name in (self.orders, self.confirmations, self.totals)])
        for future in futures.values():
            future.result(30)


class Feeder(threading.Thread):
    """Writes the orders over several seconds with an idempotent producer, which retries
    across the broker's kill; so the application's kills land mid-stream."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.failed: list = []

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                             "delivery.timeout.ms": 120000})
        for number in range(ORDERS_TOTAL):
            key, value = order(number)
            producer.produce(self.topic, value.encode(), key.encode(),
                             on_delivery=lambda err, _msg: err and self.failed.append(err))
            producer.poll(0)
            if number % 100 == 99:
                time.sleep(0.05)  # a stream, not one burst
        if producer.flush(180):
            self.failed.append("unflushed")


class CommittedReader:
    """Everything committed to the output topics so far, read_committed, from offset 0."""

    def __init__(self, bootstrap: str, topics: Topics):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"checker-{uuid.uuid4().hex[:6]}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False})
        self.consumer.assign([TopicPartition(topic, p, 0) for topic in (topics.confirmations, topics.totals)
                              for p in range(PARTITIONS)])
        self.topics = topics
        self.confirmations: list[str] = []
        self.totals: dict[str, list[int]] = {}

    def poll(self) -> None:
        for message in self.consumer.consume(2000, timeout=0.5):
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                continue
            if message.topic() == self.topics.confirmations:
                self.confirmations.append(message.key().decode())
            else:
                product = message.key().decode()
                self.totals.setdefault(product, []).append(int.from_bytes(message.value(), "big", signed=True))

    def close(self) -> None:
        self.consumer.close()


def confirmations_written(bootstrap: str, topic: str) -> int:
    """Confirmation records written, committed or not (the high watermarks)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return sum(reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                   for p in range(PARTITIONS))
    except Exception:  # the broker is restarting: nothing known yet
        return 0
    finally:
        reader.close()


def expected_totals() -> dict[str, int]:
    """Each product's sum of quantities. The order its running totals arrive in is not fixed
    (its orders come from three input partitions), but the last one is."""
    sums: dict[str, int] = {}
    for number in range(ORDERS_TOTAL):
        _customer, product, quantity = order(number)[1].split(",")
        sums[product] = sums.get(product, 0) + int(quantity)
    return sums


def listed_type(bootstrap: str, group_id: str) -> str | None:
    """The group's type as ListGroups (v5) names it: classic, consumer, share or streams."""
    async def list_them():
        async with Admin(bootstrap) as admin:
            return await admin.list_groups()
    return next((g.group_type for g in asyncio.run(list_them()) if g.group_id == group_id), None)


@pytest.mark.timeout(600)
def test_streams_exactly_once_v2_through_application_and_broker_kills(any_broker_to_kill, tmp_path):
    exactly_once_through_kills(any_broker_to_kill, "classic", tmp_path)


# On the streams protocol (KIP-1071) Weir alone: Apache Kafka 4.4.0 itself does not pass this
# scenario reliably there. In 2 of 8 runs on this machine it failed, once with 91 duplicate
# confirmations under read_committed, once with one aggregation task that never caught up within
# 180 s of the broker's kill -9 (Streams warns that warm-up replicas are not supported there yet).
# A reference that fails on its own cannot decide; tests/reference/test_differential_streams_groups.py
# compares the protocol itself with Kafka on the wire.
@pytest.mark.timeout(600)
def test_streams_exactly_once_v2_on_streams_groups_through_application_and_broker_kills(weir_broker_to_kill,
                                                                                        tmp_path):
    exactly_once_through_kills(weir_broker_to_kill, "streams", tmp_path)


def exactly_once_through_kills(broker, group_protocol: str, tmp_path) -> None:
    topics = Topics()
    topics.create(broker.bootstrap)
    application_id = f"orders-streams-{uuid.uuid4().hex[:6]}"
    feeder = Feeder(broker.bootstrap, topics.orders)
    feeder.start()
    # classic: one instance at a time, killed and restarted; streams: two side by side, each
    # killed in turn and replaced from its own state directory (so with its process id)
    instances = 1 if group_protocol == "classic" else 2
    apps: list[StreamsApp] = []
    running: list[StreamsApp] = []

    def start(slot: int) -> StreamsApp:
        app = StreamsApp(broker.bootstrap, application_id, tmp_path / f"streams-state-{slot}", topics, group_protocol)
        apps.append(app)
        return app

    try:
        running = [start(slot) for slot in range(instances)]
        for app in running:
            app.wait_running()
        for turn, kill_after in enumerate((600, 1600)):
            wait_until(lambda goal=kill_after: confirmations_written(broker.bootstrap, topics.confirmations) >= goal,
                       f"{kill_after} confirmations written", 120)
            slot = turn % instances
            running[slot].kill()
            running[slot] = start(slot)
            running[slot].wait_running()
        wait_until(lambda: confirmations_written(broker.bootstrap, topics.confirmations) >= 2600,
                   "2600 confirmations written", 120)
        expected_type = "classic" if group_protocol == "classic" else "streams"
        assert listed_type(broker.bootstrap, application_id) == expected_type
        broker.kill()  # under the running application, most likely inside a transaction
        broker.start()
        feeder.join(240)
        assert not feeder.is_alive() and not feeder.failed

        sums = expected_totals()
        reader = CommittedReader(broker.bootstrap, topics)
        try:
            def complete() -> bool:
                reader.poll()
                return (len(reader.confirmations) >= ORDERS_TOTAL
                        and all(reader.totals.get(product, [0])[-1] >= total for product, total in sums.items()))
            wait_until(complete, lambda: f"the output to be complete: {len(reader.confirmations)} "
                                         f"confirmations, totals {({p: t[-1] for p, t in reader.totals.items()})};"
                                         f" the application said:\n{''.join(running[-1].lines[-60:])}", 180)
            reader.poll()  # anything beyond the expected output would show up here
        finally:
            reader.close()
        for app in running:  # all at once: one closing alone would hand its tasks to the other mid-close
            app.terminate()
        for app in running:
            app.wait_stopped()

        assert sorted(reader.confirmations) == sorted(order(n)[0] for n in range(ORDERS_TOTAL))
        assert {product: emitted[-1] for product, emitted in reader.totals.items()} == sums
        for product, emitted in reader.totals.items():
            assert emitted == sorted(set(emitted)), f"{product}: totals went back or repeated: {emitted[-20:]}"
    finally:
        for app in apps:
            if app.process.poll() is None:
                app.kill()
