"""Rolling a fleet of Java consumers from group.protocol=classic to consumer and back while a
producer writes, on each broker (KIP-848's online migration): the classic group upgrades when the
first consumer-protocol member joins, classic and consumer members share the partitions while the
fleet rolls (DescribeGroups then answers as for any consumer group), and the group downgrades when
the last consumer-protocol member leaves. Offsets are
committed after each poll and before a partition is given up: every record is consumed once, none
lost and none twice."""

import itertools
import threading

from confluent_kafka import ConsumerGroupType, Producer
from confluent_kafka.admin import AdminClient

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_groups
from tests.features.raw import ask
from tests.java.java_client import JavaProcess
from tests.java.test_consumer_group import consumed, ownership
from tests.support.topics import create_topic
from tests.support.waiting import wait_until

PARTITIONS = 6


class SteadyProducer:
    """Writes numbered records (a bounded count, paced) from a thread until told to stop."""

    def __init__(self, bootstrap: str, topic: str, limit: int = 20_000):
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic, self.limit, self.sent = topic, limit, []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for i in range(self.limit):
            if self.stopped.wait(0.005):
                break
            value = f"m-{i}"
            self.producer.produce(self.topic, key=str(i), value=value)
            self.sent.append(value)
            self.producer.poll(0)

    def stop(self) -> list[str]:
        self.stopped.set()
        self.thread.join(30)
        assert self.producer.flush(30) == 0
        return self.sent


def group_type(admin: AdminClient, group: str) -> ConsumerGroupType | None:
    """The group's type as ListGroups (v5) reports it."""
    listed = admin.list_consumer_groups(request_timeout=10).result(30).valid
    return next((listing.type for listing in listed if listing.group_id == group), None)


def described_by_describe_groups(broker, group: str) -> dict[int, tuple]:
    """DescribeGroups v5 and v6 (sent raw) of one group: error, message, state, protocol type, members."""
    answers = {}
    for version in (5, 6):
        described = ask(broker, ApiKey.DESCRIBE_GROUPS, version, describe_groups.REQUEST(groups=[group])).groups[0]
        answers[version] = (described.error_code, described.error_message, described.group_state,
                            described.protocol_type, len(described.members))
    return answers


def test_rolling_from_classic_to_consumer_and_back(any_broker, topic_name):
    bootstrap, group = any_broker.bootstrap, f"{topic_name}-group"
    create_topic(bootstrap, topic_name, PARTITIONS)
    producer = SteadyProducer(bootstrap, topic_name)
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def becomes(kind: ConsumerGroupType) -> None:
        wait_until(lambda: group_type(admin, group) == kind, f"group type {kind}", 30)
    members: list[JavaProcess] = []

    def start(name: str, protocol: str) -> JavaProcess:
        member = JavaProcess("GroupMember", bootstrap, topic_name, group, name, protocol)
        members.append(member)
        member.wait_for(lambda event: event["event"] == "assigned" and event["partitions"])
        return member

    def progress() -> None:  # some records reach the members before the next step
        seen = len(consumed(members))
        wait_until(lambda: len(consumed(members)) >= seen + 50,
                   lambda: "records consumed; last events: " + repr([m.events[-3:] for m in members])
                   + "".join(line for line in getattr(any_broker, "lines", [])[-40:] if "group" in line), 60)

    try:
        old = [start("classic-a", "classic"), start("classic-b", "classic")]
        becomes(ConsumerGroupType.CLASSIC)
        progress()
        new = start("consumer-c", "consumer")  # the first consumer-protocol member converts the group
        becomes(ConsumerGroupType.CONSUMER)
        progress()  # classic and consumer members share the partitions
        # DescribeGroups serves classic groups only, classic members or not: as Kafka 4.3 answers
        assert described_by_describe_groups(any_broker, group) == {
            5: (0, None, "Dead", "", 0),
            6: (Errors.GROUP_ID_NOT_FOUND, f"Group {group} is not a classic group.", "Dead", "", 0)}
        for leaving in old:
            leaving.stop()
            progress()
        start("classic-d", "classic")
        progress()
        new.stop()  # the last consumer-protocol member leaves: the group converts back
        becomes(ConsumerGroupType.CLASSIC)
        progress()
        sent = producer.stop()
        wait_until(lambda: set(sent) <= set(consumed(members)), "every record consumed", 60)
        for member in members:
            member.stop()
    finally:
        producer.stopped.set()
        for member in members:
            member.kill()
    values = consumed(members)
    assert len(values) == len(set(values)), "a record consumed twice"
    assert sorted(values) == sorted(sent)
    spans = {member.events[0]["member"]: ownership(member) for member in members}
    for (name_a, spans_a), (name_b, spans_b) in itertools.combinations(spans.items(), 2):
        for (partition_a, start_a, end_a), (partition_b, start_b, end_b) in itertools.product(spans_a, spans_b):
            if partition_a == partition_b:
                assert end_a <= start_b or end_b <= start_a, \
                    f"partition {partition_a} owned by {name_a} and {name_b} at once"
