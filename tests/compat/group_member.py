"""One consumer-group member in its own process, so a test can kill it with -9.

    python -m tests.compat.group_member CLIENT BOOTSTRAP GROUP TOPIC [INSTANCE_ID [SESSION_MS]]

CLIENT is confluent-kafka, aiokafka or kafka-python; INSTANCE_ID makes it a
static member (group.instance.id). The member subscribes,
and after every batch commits what it read, synchronously. It reports on
stdout, one line each:

    A 0,1,2          its assignment changed (partitions, sorted)
    R 1 17 value     a record: partition, offset, value
    C 1 18           a commit succeeded: partition, next offset

SIGTERM closes the consumer properly (LeaveGroup) and exits; SIGKILL is a
member that just dies.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading

HEARTBEAT_MS = 500


def say(*parts) -> None:
    print(*parts, flush=True)


class Reporter:
    def __init__(self):
        self.assignment: list[int] | None = None

    def assigned(self, partitions) -> None:
        partitions = sorted(partitions)
        if partitions != self.assignment:
            self.assignment = partitions
            say("A", ",".join(map(str, partitions)))


def report_records(batches) -> dict:
    """kafka-python and aiokafka batches ({tp: records}): report each record; the next offset per partition."""
    nexts = {}
    for tp, records in batches.items():
        for record in records:
            say("R", tp.partition, record.offset, record.value.decode())
        nexts[tp] = records[-1].offset + 1
    return nexts


def report_commits(nexts: dict) -> None:
    for tp, offset in nexts.items():
        say("C", tp.partition, offset)


def run_confluent(bootstrap: str, group: str, topic: str, instance: str | None, session_ms: int,
                  stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": session_ms,
                         "heartbeat.interval.ms": HEARTBEAT_MS,
                         **({"group.instance.id": instance} if instance else {})})
    consumer.subscribe([topic])
    reporter = Reporter()
    while not stop.is_set():
        records = [r for r in consumer.consume(100, timeout=0.2) if not r.error()]
        reporter.assigned(tp.partition for tp in consumer.assignment())
        if not records:
            continue
        nexts = {}
        for record in records:
            say("R", record.partition(), record.offset(), record.value().decode())
            nexts[record.partition()] = record.offset() + 1
        try:
            consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in nexts.items()], asynchronous=False)
        except KafkaException:
            continue  # the partitions moved in a rebalance; their new owner reads them again
        for p, o in nexts.items():
            say("C", p, o)
    consumer.close()


def run_kafka_python(bootstrap: str, group: str, topic: str, instance: str | None, session_ms: int,
                     stop: threading.Event) -> None:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=session_ms,
                             heartbeat_interval_ms=HEARTBEAT_MS, group_instance_id=instance)
    reporter = Reporter()
    while not stop.is_set():
        # kafka-python 3.0.12 can lose a JoinGroup that completes just as poll()'s timeout ends (the
        # next poll sees no rejoin needed and never enables heartbeats or takes the assignment); a
        # timeout longer than a rebalance takes keeps the join inside one poll
        batches = consumer.poll(timeout_ms=2000)
        reporter.assigned(tp.partition for tp in consumer.assignment())
        if not batches:
            continue
        nexts = report_records(batches)
        try:
            consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in nexts.items()})
        except KafkaError:
            continue
        report_commits(nexts)
    consumer.close()


async def run_aiokafka(bootstrap: str, group: str, topic: str, instance: str | None, session_ms: int,
                       stop: threading.Event) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                                enable_auto_commit=False, session_timeout_ms=session_ms,
                                heartbeat_interval_ms=HEARTBEAT_MS, group_instance_id=instance)
    await consumer.start()
    reporter = Reporter()
    while not stop.is_set():
        batches = await consumer.getmany(timeout_ms=200)
        reporter.assigned(tp.partition for tp in consumer.assignment())
        if not batches:
            continue
        nexts = report_records(batches)
        try:
            await consumer.commit(nexts)
        except KafkaError:
            continue
        report_commits(nexts)
    await consumer.stop()


def main(client: str, bootstrap: str, group: str, topic: str, instance: str = "", session_ms: str = "3000") -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    args = (bootstrap, group, topic, instance or None, int(session_ms), stop)
    if client == "confluent-kafka":
        run_confluent(*args)
    elif client == "kafka-python":
        run_kafka_python(*args)
    elif client == "aiokafka":
        asyncio.run(run_aiokafka(*args))
    else:
        raise SystemExit(f"unknown client {client}")
    say("closed")


if __name__ == "__main__":
    main(*sys.argv[1:])
