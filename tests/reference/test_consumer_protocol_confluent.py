"""confluent-kafka (librdkafka 2.x) consuming as a group with ``group.protocol=consumer`` (KIP-848),
on Weir and on Apache Kafka 4.4.0: members join and leave while records keep coming, and every
record is consumed exactly once (offsets committed after each record and before a partition is
given up); no partition is owned by two members at the same moment; the group as
ConsumerGroupDescribe shows it (epochs, assignments) is complete and disjoint on both brokers."""

from __future__ import annotations

import itertools
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 6


class Member(threading.Thread):
    """One consumer in its own thread, recording what it got and when it owned what."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str, assignor: str | None = None):
        super().__init__(daemon=True)
        config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "client.id": name, "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        if assignor:
            config["group.remote.assignor"] = assignor
        self.consumer = Consumer(config)
        self.topic, self.name = topic, name
        self.values: list[str] = []
        self.spans: list[tuple[int, float, float]] = []
        self.owned: dict[int, float] = {}
        self.errors: list[str] = []
        self.stopping = threading.Event()

    def _assigned(self, consumer, partitions):
        for tp in partitions:
            assert tp.partition not in self.owned, f"{self.name}: {tp.partition} assigned twice"
            self.owned[tp.partition] = time.monotonic()

    def _revoked(self, consumer, partitions):
        try:
            consumer.commit(asynchronous=False)
        except KafkaException as exc:  # nothing consumed since the last commit: _NO_OFFSET
            if "NO_OFFSET" not in str(exc):
                self.errors.append(str(exc))
        now = time.monotonic()
        for tp in partitions:
            self.spans.append((tp.partition, self.owned.pop(tp.partition), now))

    def run(self):
        self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._revoked)
        while not self.stopping.is_set():
            message = self.consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                self.errors.append(str(message.error()))
                continue
            self.values.append(message.value().decode())
            self.consumer.commit(message=message, asynchronous=False)
        self.consumer.close()  # leaves the group (epoch -1): its partitions go to the others at once
        now = time.monotonic()
        for partition, since in self.owned.items():
            self.spans.append((partition, since, now))

    def stop(self):
        self.stopping.set()
        self.join(60)
        assert not self.is_alive()


def produce(bootstrap: str, topic: str, prefix: str, count: int) -> list[str]:
    producer = Producer({"bootstrap.servers": bootstrap})
    values = [f"{prefix}-{i}" for i in range(count)]
    for i, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    return values


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)  # poll interval of a deadline-bounded wait on other threads


def consumed(members) -> list[str]:
    return [value for member in members for value in list(member.values)]


def test_members_join_and_leave_mid_stream(any_broker, topic_name):
    bootstrap, group = any_broker.bootstrap, f"{topic_name}-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic_name, PARTITIONS, 1)])[topic_name].result(30)
    expected = produce(bootstrap, topic_name, "first", 300)
    members = [Member(bootstrap, topic_name, group, "a")]
    members[0].start()
    try:
        wait_until(lambda: len(consumed(members)) >= 100, 60, "the first member to consume")
        for name in ("b", "c"):
            members.append(Member(bootstrap, topic_name, group, name))
            members[-1].start()
        wait_until(lambda: all(m.owned for m in members), 60, "all three to own partitions")
        expected += produce(bootstrap, topic_name, "second", 300)  # on every partition: each member gets some
        wait_until(lambda: all(any(v.startswith("second") for v in m.values) for m in members), 60,
                   "each member to consume")
        owners = describe_owners(bootstrap, group)
        assert sorted(owners) == list(range(PARTITIONS)), owners  # complete and disjoint
        members[1].stop()  # b leaves mid-stream
        expected += produce(bootstrap, topic_name, "third", 300)
        wait_until(lambda: set(expected) <= set(consumed(members)), 60, "every record")
    finally:
        for member in members:
            if member.is_alive():
                member.stop()
    values = consumed(members)
    assert sorted(values) == sorted(expected), "each record exactly once"
    assert not [e for m in members for e in m.errors], [e for m in members for e in m.errors]
    for a, b in itertools.combinations(members, 2):
        for (pa, start_a, end_a), (pb, start_b, end_b) in itertools.product(a.spans, b.spans):
            if pa == pb:
                assert end_a <= start_b or end_b <= start_a, f"partition {pa} owned by {a.name} and {b.name} at once"
    assert all(m.values for m in members), "every member consumed"


def describe_owners(bootstrap: str, group: str) -> list[int]:
    """Partitions of each member's current assignment, from ConsumerGroupDescribe (via the admin API)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    description = admin.describe_consumer_groups([group])[group].result(30)
    assert description.type.name == "CONSUMER"
    return [tp.partition for member in description.members for tp in member.assignment.topic_partitions]


def test_regex_subscription_takes_in_topics_created_later(any_broker, topic_name):
    """librdkafka sends a ``^``-subscription as SubscribedTopicRegex (v1); a matching topic created
    while the member runs is assigned to it, on both brokers."""
    bootstrap, group = any_broker.bootstrap, f"{topic_name}-regex-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    first, later = f"{topic_name}-rx-a", f"{topic_name}-rx-b"
    admin.create_topics([NewTopic(first, 2, 1)])[first].result(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
    try:
        consumer.subscribe([f"^{topic_name}-rx-.*"])
        wanted = {f"{first}-{i}" for i in range(5)}
        producer = Producer({"bootstrap.servers": bootstrap})
        for value in sorted(wanted):
            producer.produce(first, value=value.encode())
        producer.flush(30)
        got: set[str] = set()

        def poll_until(values, what):
            deadline = time.monotonic() + 60
            while not values <= got:
                assert time.monotonic() < deadline, f"timed out waiting for {what}: {values - got}"
                message = consumer.poll(0.2)
                if message is not None and not message.error():
                    got.add(message.value().decode())
        poll_until(wanted, "the first topic's records")
        admin.create_topics([NewTopic(later, 2, 1)])[later].result(30)
        more = {f"{later}-{i}" for i in range(5)}
        for value in sorted(more):
            producer.produce(later, value=value.encode())
        producer.flush(30)
        poll_until(more, "the later topic's records")
        assert {tp.topic for tp in consumer.assignment()} == {first, later}
    finally:
        consumer.close()
