"""Kafka's kafka-streams-groups tool against Weir and Kafka 4.4.0 alike: --list, --describe (offsets,
--members, --state), --reset-offsets and --delete, on a streams group whose member the test drives
over the wire (StreamsGroupHeartbeat, then OffsetCommit with its member epoch), so no Streams JVM
is needed."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import offset_commit, streams_group_heartbeat as hb
from tests.features.raw import ask
from tests.reference.test_differential_consumer_heartbeat import coordinator_ready
from tests.reference.test_differential_streams_groups import Member, _until
from tests.support.admin_cli import cli
from tests.tools.tools import create_topics, run_tool, table

STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def stateless(source: str):
    return hb.Topology(epoch=1, subtopologies=[hb.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[], state_changelog_topics=[],
        repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


def test_kafka_streams_groups(any_broker):
    bootstrap, run = any_broker.bootstrap, uuid.uuid4().hex[:8]
    topic, group = f"streams-tool-{run}", f"streams-tool-app-{run}"
    tool = lambda *args: run_tool(STREAMS_GROUPS, "--bootstrap-server", bootstrap, *args)  # noqa: E731
    create_topics(bootstrap, NewTopic(topic, 2, 1))
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce(topic, value=b"%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    coordinator_ready(any_broker, group)
    member = Member(any_broker, group, topic, "tool-process")
    member.beat(0, stateless(topic))
    _until("the member's tasks", lambda: True if (member.beat(), member.task_count())[1] == 2 else None)
    committed = ask(any_broker, ApiKey.OFFSET_COMMIT, 9, offset_commit.REQUEST(
        group_id=group, generation_id_or_member_epoch=member.epoch, member_id=member.member_id, topics=[
            offset_commit.RequestTopic(name=topic, partitions=[
                offset_commit.RequestPartition(partition_index=p, committed_offset=3, committed_metadata="")
                for p in range(2)])]))
    assert [p.error_code for t in committed.topics for p in t.partitions] == [0, 0]

    assert group in ok(tool("--list")).split()
    assert [group, "streams", "Stable", "streams"] in [line.split() for line in cli(bootstrap, "groups", "list").stdout
                                                       .splitlines()]  # weir-admin too, beside the other types
    offsets = table(ok(tool("--describe", "--group", group, "--offsets")))
    assert sorted((r["GROUP"], r["TOPIC"], r["PARTITION"], r["OFFSET-LAG"]) for r in offsets) == [
        (group, topic, str(p), "2") for p in range(2)]
    members = table(ok(tool("--describe", "--group", group, "--members")))
    assert [(r["GROUP"], r["MEMBER"], r["PROCESS"], r["ASSIGNMENTS"]) for r in members] == [
        (group, member.member_id, "tool-process", "ACTIVE: 0:[0,1];")]
    state = table(ok(tool("--describe", "--group", group, "--state")))
    assert [(r["GROUP"], r["ASSIGNOR"], r["STATE"], r["#MEMBERS"]) for r in state] == [(group, "sticky", "Stable", "1")]
    refused = tool("--reset-offsets", "--group", group, "--input-topic", topic, "--to-earliest", "--execute")
    assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, but the current state is "
            "Stable.") in refused.stdout

    assert member.beat(-1).error_code == 0
    reset = table(ok(tool("--reset-offsets", "--group", group, "--input-topic", topic, "--to-earliest", "--execute")))
    assert sorted((r["GROUP"], r["TOPIC"], r["PARTITION"], r["NEW-OFFSET"]) for r in reset) == [
        (group, topic, str(p), "0") for p in range(2)]
    state = table(ok(tool("--describe", "--group", group, "--state")))
    assert [(r["STATE"], r["#MEMBERS"]) for r in state] == [("Empty", "0")]
    deleted = ok(tool("--delete", "--group", group))
    assert f"Deletion of requested streams groups ('{group}') was successful." in deleted
    assert group not in ok(tool("--list")).split()
