"""Share groups (KIP-932) against the real broker with confluent-kafka's ShareConsumer: several
members on one partition get every record once; RELEASE brings a record back with delivery count
2; REJECT archives it; records held by a member that dies come back to another member when its
connection closes (SIGKILL) or once their acquisition lock expires (SIGSTOP: connection open)."""

import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from tests.broker_process import REPO, BrokerProcess

SHORT_LOCK_GROUP = "share-short-lock"
LOCK_MS = 2000
# Groups start at the earliest offset so that records produced before a member joins count; the
# short-lock group's locks expire in 2 s. Set as Kafka's group configs (config resource GROUP, 32).
GROUP_CONFIGS = {
    "share-three": {"share.auto.offset.reset": "earliest"},
    "share-acks": {"share.auto.offset.reset": "earliest"},
    SHORT_LOCK_GROUP: {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_MS)},
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # the short lock is within the group config's bounds only once the broker's floor is lowered (15 s by default)
    process = BrokerProcess(tmp_path_factory.mktemp("share"),
                            overrides={"group.share.min.record.lock.duration.ms": "1000"}).start()
    set_group_configs(process, GROUP_CONFIGS)
    yield process
    process.stop()


def set_group_configs(broker, configs: dict[str, dict[str, str]]) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resources = [ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in settings.items()])
        for group, settings in configs.items()]
    for future in admin.incremental_alter_configs(resources).values():
        future.result(30)


def make_topic(broker) -> str:
    name = f"queue-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # held: the future needs its handle
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def produce(broker, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"job-%d" % i)
    assert producer.flush(30) == 0


def share_consumer(broker, group: str, topic: str, **extra) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, **extra})
    consumer.subscribe([topic])
    return consumer


def test_three_members_on_one_partition_consume_every_record_exactly_once(broker):
    topic, total = make_topic(broker), 600
    seen: list[tuple[int, int, int]] = []  # member, offset, delivery count
    lock = threading.Lock()
    done = threading.Event()

    def member(index: int) -> None:
        consumer = share_consumer(broker, "share-three", topic)  # implicit acknowledgement
        try:
            deadline = time.monotonic() + 120
            while not done.is_set() and time.monotonic() < deadline:
                for message in consumer.poll(0.2):
                    assert message.error() is None, message.error()
                    with lock:
                        seen.append((index, message.offset(), message.delivery_count()))
                        if len({offset for _, offset, _ in seen}) >= total:
                            done.set()
            consumer.commit_sync(30)  # implicit mode: accepts the last poll's records (close does not)
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    produce(broker, topic, total)
    for thread in threads:
        thread.join(150)
    offsets = sorted(offset for _, offset, _ in seen)
    assert offsets == list(range(total))  # every record, none twice
    assert {count for _, _, count in seen} == {1}


def test_release_comes_back_with_delivery_count_two_and_reject_archives(broker):
    topic = make_topic(broker)
    produce(broker, topic, 3)
    consumer = share_consumer(broker, "share-acks", topic, **{"share.acknowledgement.mode": "explicit"})
    try:
        first = poll_records(consumer, 3)
        assert [(m.offset(), m.delivery_count()) for m in first] == [(0, 1), (1, 1), (2, 1)]
        kinds = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.RELEASE, 2: AcknowledgeType.REJECT}
        for message in first:
            consumer.acknowledge(message, kinds[message.offset()])
        results = consumer.commit_sync(30)
        assert all(error is None for error in results.values()), results
        again = poll_records(consumer, 1)
        assert [(m.offset(), m.delivery_count()) for m in again] == [(1, 2)]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync(30)
        # nothing else comes back: 0 was accepted, 2 rejected (archived), 1 accepted on its second delivery
        assert poll_for(consumer, seconds=3) == []
    finally:
        consumer.close()


@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_records_held_by_a_dead_member_come_back_to_another(broker, how):
    """Killed (SIGKILL): its connection closes and, as on Kafka 4.4, its share session ends and its
    records go back at once. Stopped (SIGSTOP): its connection stays open, its records come back
    when their acquisition lock (2 s here) expires."""
    topic = make_topic(broker)
    produce(broker, topic, 10)
    worker = subprocess.Popen([sys.executable, "-m", "tests.share.share_worker", broker.bootstrap, SHORT_LOCK_GROUP,
                               topic], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = worker.stdout.readline()
        assert line.startswith("HELD"), line
        held = [int(offset) for offset in line.split()[1:]]
        assert held
        if how == "killed":
            worker.kill()  # no acknowledgement, no leave
            worker.wait(30)
        else:
            worker.send_signal(signal.SIGSTOP)  # holds its records and its connection, silent
        consumer = share_consumer(broker, SHORT_LOCK_GROUP, topic)
        try:
            got = {}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(got) < 10:
                for message in consumer.poll(0.5):
                    assert message.error() is None, message.error()
                    got[message.offset()] = message.delivery_count()
        finally:
            consumer.close()
        assert sorted(got) == list(range(10))
        assert {offset: got[offset] for offset in held} == {offset: 2 for offset in held}  # came back once
        assert all(count == 1 for offset, count in got.items() if offset not in held)
    finally:
        if worker.poll() is None:
            worker.kill()  # SIGKILL ends a stopped process too
            worker.wait(30)


def poll_records(consumer, count: int, seconds: float = 60):
    messages = []
    deadline = time.monotonic() + seconds
    while len(messages) < count and time.monotonic() < deadline:
        for message in consumer.poll(0.5):
            assert message.error() is None, message.error()
            messages.append(message)
    return messages


def poll_for(consumer, seconds: float):
    """What arrives within ``seconds`` (a window to show nothing comes back, not a wait for an event)."""
    messages = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        messages += [m for m in consumer.poll(0.5) if m.error() is None]
    return messages
