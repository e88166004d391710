"""``weir-admin share-groups`` against kafka-share-groups: on one broker (Weir, then Kafka 4.4.0),
the same group at the same moment, each command run by both tools; their rows must be the same
(cells compared with the column padding ignored). A change made by one tool (reset, delete-offsets)
is then described by both."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from tests.support.admin_cli import cli, cli_json, run_cli
from tests.tools.test_share_groups_tools import SHARE_GROUPS
from tests.tools.tools import create_topics, run_tool


def rows(text: str) -> list[list[str]]:
    """Non-blank lines, cells split on whitespace (each tool pads its own way)."""
    return [line.split() for line in text.splitlines() if line.strip()]


def kafka_tool(bootstrap: str, *args: str) -> list[list[str]]:
    result = run_tool(SHARE_GROUPS, "--bootstrap-server", bootstrap, *args)
    assert result.returncode == 0, (result.stdout, result.stderr)
    return rows(result.stdout)


def ours(bootstrap: str, *args: str) -> list[list[str]]:
    return rows(cli(bootstrap, "share-groups", *args).stdout)


def same_rows(bootstrap: str, kafka_args: tuple[str, ...], our_args: tuple[str, ...]) -> list[list[str]]:
    """The rows of both, in order, except that Kafka's reset plan comes in no set order (a hash map's)."""
    theirs, mine = kafka_tool(bootstrap, *kafka_args), ours(bootstrap, *our_args)
    if "--reset-offsets" in kafka_args:
        theirs, mine = theirs[:1] + sorted(theirs[1:]), mine[:1] + sorted(mine[1:])
    assert mine == theirs, kafka_args
    return theirs


def test_weir_admin_share_groups_prints_the_rows_kafka_share_groups_prints(any_broker):
    bootstrap, run = any_broker.bootstrap, uuid.uuid4().hex[:8]
    topic, group = f"share-cli-{run}", f"share-cli-group-{run}"
    create_topics(bootstrap, NewTopic(topic, 2, 1))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(6):
        producer.produce(topic, value=b"job-%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "cli-test",
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    try:
        got, deadline = 0, time.monotonic() + 60
        while got < 6 and time.monotonic() < deadline:
            batch = consumer.poll(0.5)
            got += len(batch)
            for message in batch:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT if message.offset() < 2 else
                                     AcknowledgeType.REJECT)
        consumer.commit_sync(30)
        assert got == 6
        # The session's brokers hold other tests' share groups, whose members may leave between two
        # listings: the two tools' headers and this group's rows are compared.
        theirs, mine = kafka_tool(bootstrap, "--list"), ours(bootstrap, "list")
        assert [group] in theirs and [group] in mine
        theirs, mine = kafka_tool(bootstrap, "--list", "--state"), ours(bootstrap, "list", "--state")
        assert mine[0] == theirs[0]
        assert [row for row in mine if row[0] == group] == [row for row in theirs if row[0] == group] == [
            [group, "Stable"]]
        for verbose in ((), ("--verbose",)):
            same_rows(bootstrap, ("--describe", "--group", group, *verbose), ("describe", group, *verbose))
            members = same_rows(bootstrap, ("--describe", "--group", group, "--members", *verbose),
                                ("describe", group, "--members", *verbose))
            assert [(r[0], r[3], r[4], r[-1]) for r in members[1:]] == [(group, "cli-test", "2", f"{topic}:0,1")]
            state = same_rows(bootstrap, ("--describe", "--group", group, "--state", *verbose),
                              ("describe", group, "--state", *verbose))
            assert state[1][0] == group and state[1][-1] == "1"
        refused = run_cli(bootstrap, "share-groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                          "--execute")
        assert refused.returncode == 1 and "NON_EMPTY_GROUP" in refused.stderr
    finally:
        consumer.close()
    same_rows(bootstrap, ("--describe", "--group", group, "--state"), ("describe", group, "--state"))
    same_rows(bootstrap, ("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--dry-run"),
              ("reset-offsets", group, "--topic", topic, "--to-earliest"))
    assert ours(bootstrap, "reset-offsets", group, "--all-topics", "--to-offset", "1", "--execute") == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "0", "1"], [group, topic, "1", "1"]]
    assert same_rows(bootstrap, ("--describe", "--group", group), ("describe", group))[1:] == [
        [group, topic, "0", "1", "2"], [group, topic, "1", "1", "2"]]
    kafka_tool(bootstrap, "--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-latest", "--execute")
    assert same_rows(bootstrap, ("--describe", "--group", group, "--verbose"), ("describe", group, "--verbose")
                     )[1:] == [[group, topic, "0", "0", "1", "2"], [group, topic, "1", "0", "3", "0"]]
    assert cli_json(bootstrap, "share-groups", "describe", group) == [{"group": group, "offsets": [
        {"topic": topic, "partition": 0, "start_offset": 1, "leader_epoch": 0, "lag": 2},
        {"topic": topic, "partition": 1, "start_offset": 3, "leader_epoch": 0, "lag": 0}]}]
    assert ours(bootstrap, "delete-offsets", group, "--topic", topic) == [["TOPIC", "STATUS"], [topic, "Successful"]]
    same_rows(bootstrap, ("--describe", "--group", group), ("describe", group))  # "... has no offset information."
    assert ours(bootstrap, "delete", group) == [["GROUP", "STATUS"], [group, "Successful"]]
    assert [group] not in kafka_tool(bootstrap, "--list")
    missing = run_cli(bootstrap, "share-groups", "describe", group)
    assert missing.returncode == 1 and "GROUP_ID_NOT_FOUND" in missing.stderr
