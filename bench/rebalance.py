"""Rebalance cost when a fourth member joins a 3-member group on a 60-partition topic, on Weir and on
Apache Kafka 4.3.1: classic eager (range), classic cooperative-sticky, and the consumer protocol
(KIP-848, server-side uniform). confluent-kafka members, each polling in its own thread.

Measured from the fourth member's subscribe() until the four own 15 partitions each (complete and
disjoint): the time, and the partitions the first three gave up (revocations) on the way. Both
brokers run the test suite's settings (tests/reference/kafka.py: group.initial.rebalance.delay.ms
0, consumer-protocol heartbeats every 0.5 s); the classic members heartbeat every 0.5 s too.

    python -m bench.rebalance [--brokers weir,kafka] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parent.parent
PARTITIONS, MEMBERS = 60, 3
PROTOCOLS = {
    "classic eager": {"group.protocol": "classic", "partition.assignment.strategy": "range",
                      "heartbeat.interval.ms": 500},
    "classic cooperative-sticky": {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky",
                                   "heartbeat.interval.ms": 500},
    "consumer (KIP-848)": {"group.protocol": "consumer", "group.remote.assignor": "uniform"},
}


class Member(threading.Thread):
    def __init__(self, bootstrap, topic, group, settings):
        super().__init__(daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", **settings})
        self.topic = topic
        self.owned: set[int] = set()
        self.revoked = 0
        self.stopping = threading.Event()
        self.subscribed_at = 0.0

    def _assign(self, consumer, partitions):
        self.owned |= {tp.partition for tp in partitions}

    def _revoke(self, consumer, partitions):
        gone = {tp.partition for tp in partitions}
        self.revoked += len(gone & self.owned)
        self.owned -= gone

    def run(self):
        self.subscribed_at = time.monotonic()
        self.consumer.subscribe([self.topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._revoke)
        while not self.stopping.is_set():
            self.consumer.poll(0.05)
        self.consumer.close()


def wait_for(condition, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not settle")
        time.sleep(0.01)


def balanced(members, size):
    owned = [p for m in members for p in m.owned]
    return len(owned) == len(set(owned)) == PARTITIONS and all(len(m.owned) == size for m in members)


def one_round(bootstrap: str, settings: dict) -> tuple[float, int]:
    topic, group = f"rebalance-{uuid.uuid4().hex[:8]}", f"rebalance-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(PARTITIONS):
        producer.produce(topic, b"x", partition=partition)
    producer.flush(30)
    members = [Member(bootstrap, topic, group, settings) for _ in range(MEMBERS)]
    for member in members:
        member.start()
    try:
        wait_for(lambda: balanced(members, PARTITIONS // MEMBERS))
        time.sleep(1.0)  # let the group settle (no rebalance still in flight)
        for member in members:
            member.revoked = 0
        newcomer = Member(bootstrap, topic, group, settings)
        members.append(newcomer)
        newcomer.start()
        wait_for(lambda: newcomer.subscribed_at > 0)
        wait_for(lambda: balanced(members, PARTITIONS // (MEMBERS + 1)))
        elapsed = time.monotonic() - newcomer.subscribed_at
        return elapsed, sum(m.revoked for m in members[:MEMBERS])
    finally:
        for member in members:
            member.stopping.set()
        for member in members:
            member.join(30)


def start_broker(kind: str):
    """(bootstrap, the broker) for ``kind``; Weir as a user's test suite runs it (weir.run_broker's
    child process), Apache Kafka as the reference suite does, both with the same settings."""
    sys.path.insert(0, str(REPO))
    from reference.kafka import SHARED_TEST_SETTINGS, KafkaProcess
    if kind == "weir":
        from weir.testing.process import ProcessBroker
        broker = ProcessBroker(SHARED_TEST_SETTINGS, faults=False).start()  # measured as a plain start
        return broker.bootstrap_servers, broker
    broker = KafkaProcess(Path(tempfile.mkdtemp(prefix="kafka-rebalance-"))).start()
    return broker.bootstrap, broker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="weir,kafka")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"a 4th member joins {MEMBERS} members on {PARTITIONS} partitions; median of {args.rounds} round(s)")
    for kind in args.brokers.split(","):
        bootstrap, broker = start_broker(kind)
        try:
            for name, settings in PROTOCOLS.items():
                results = [one_round(bootstrap, settings) for _ in range(args.rounds)]
                seconds = statistics.median(r[0] for r in results)
                moved = statistics.median(r[1] for r in results)
                print(f"{kind:6} {name:28} {seconds:6.2f} s  {moved:4.0f} partitions revoked", flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
