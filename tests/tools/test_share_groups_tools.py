"""Kafka's share group tools against Weir and Kafka 4.4.0 alike: kafka-share-groups --list,
--describe (offsets, --members, --state), --reset-offsets, --delete-offsets and --delete, and
kafka-console-share-consumer, on a group confluent-kafka's ShareConsumer made."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from tests.tools.tools import create_topics, run_tool, table

SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def test_kafka_share_groups_and_the_console_share_consumer(any_broker):
    bootstrap, run = any_broker.bootstrap, uuid.uuid4().hex[:8]
    topic, group = f"share-tool-{run}", f"share-tool-group-{run}"
    tool = lambda *args: run_tool(SHARE_GROUPS, "--bootstrap-server", bootstrap, *args)  # noqa: E731
    create_topics(bootstrap, NewTopic(topic, 1, 1))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        producer.produce(topic, value=b"job-%d" % i)
    assert producer.flush(30) == 0
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "tool-test"})
    consumer.subscribe([topic])
    try:
        got, deadline = 0, time.monotonic() + 60
        while got < 5 and time.monotonic() < deadline:
            got += len(consumer.poll(0.5))
        consumer.commit_sync(30)  # accepts all five
        assert got == 5
        assert group in ok(tool("--list")).split()
        offsets = table(ok(tool("--describe", "--group", group)))
        # START-OFFSET 0 although every record is done: the start as stored before the acknowledgement
        assert [(r["GROUP"], r["TOPIC"], r["PARTITION"], r["START-OFFSET"], r["LAG"]) for r in offsets] == [
            (group, topic, "0", "0", "0")]
        members = table(ok(tool("--describe", "--group", group, "--members")))
        assert [(r["GROUP"], r["CLIENT-ID"], r["#PARTITIONS"], r["ASSIGNMENT"]) for r in members] == [
            (group, "tool-test", "1", f"{topic}:0")]
        state = table(ok(tool("--describe", "--group", group, "--state")))
        assert [(r["GROUP"], r["STATE"], r["#MEMBERS"]) for r in state] == [(group, "Stable", "1")]
        refused = tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
        assert refused.returncode != 0 or "not empty" in (refused.stdout + refused.stderr).lower()
    finally:
        consumer.close()
    reset = table(ok(tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")))
    assert [(r["GROUP"], r["TOPIC"], r["PARTITION"], r["NEW-OFFSET"]) for r in reset] == [(group, topic, "0", "0")]
    assert [(r["START-OFFSET"], r["LAG"]) for r in table(ok(tool("--describe", "--group", group)))] == [("0", "5")]
    consumed = ok(run_tool(CONSOLE_SHARE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic, "--group", group,
                           "--max-messages", "5", "--timeout-ms", "30000", timeout=90))
    assert sorted(consumed.split()) == [f"job-{i}" for i in range(5)]  # all five again, from the reset
    assert [(r["TOPIC"], r["STATUS"]) for r in table(ok(tool("--delete-offsets", "--group", group, "--topic", topic)))
            ] == [(topic, "Successful")]
    assert ok(tool("--delete", "--group", group)).strip() == (
        f"Deletion of requested share groups ('{group}') was successful.")
    assert group not in ok(tool("--list")).split()
