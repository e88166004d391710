"""The log-directory and leadership APIs operators' tools call, on Weir and on a one-broker
Apache Kafka 4.4.0 (the session's shared pair, node.id 1 on both): DescribeLogDirs (35),
ElectLeaders (43), AlterPartitionReassignments (45) and ListPartitionReassignments (46),
answered field by field alike at every version both serve, including the edge cases (an
election on a partition whose leader is already the preferred one, a reassignment to a broker
that does not exist, a cancellation with none under way); then Kafka's own tools
(kafka-log-dirs, kafka-leader-election, kafka-reassign-partitions) on both.

Only this module's topics are compared: the shared brokers hold other suites' topics too.
The file system's free bytes change between two looks, so DescribeLogDirs' usable_bytes is
compared as present (positive), not by value; the directory's path is each broker's own.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import alter_partition_reassignments as reassign
from weir.protocol.messages import describe_log_dirs as log_dirs
from weir.protocol.messages import elect_leaders as elect
from weir.protocol.messages import list_partition_reassignments as listing

from tests.reference.wire import Wire
from tests.tools.tools import run_tool

TOPIC, OTHER = "ops-apis", "ops-apis-other"
OURS = {TOPIC, OTHER}
LOG_DIRS_TOOL = "org.apache.kafka.tools.LogDirsCommand"
ELECTION_TOOL = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def _log_dirs(answer, version: int) -> tuple:
    assert len(answer.results) == 1
    directory = answer.results[0]
    usable = directory.usable_bytes > 0 if version >= 4 else directory.usable_bytes
    total = directory.total_bytes > 0 if version >= 4 else directory.total_bytes
    return (answer.error_code, directory.error_code, total, usable, directory.is_cordoned,
            sorted((topic.name, sorted((p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                                       for p in topic.partitions))
                   for topic in directory.topics if topic.name in OURS))


def _elections(answer) -> tuple:
    return (answer.error_code, sorted((r.topic, [(p.partition_id, p.error_code, p.error_message)
                                                 for p in r.partition_result])
                                      for r in answer.replica_election_results
                                      if r.topic in OURS | {"missing"}))


def _reassignments(answer) -> tuple:
    return (answer.error_code, answer.error_message, answer.allow_replication_factor_change,
            [(topic.name, [(p.partition_index, p.error_code, p.error_message) for p in topic.partitions])
             for topic in answer.responses])


async def _scenario(broker) -> dict:
    seen = {}
    wire = await Wire.open(broker)
    try:
        await wire.create_topic(TOPIC, partitions=2)
        await wire.create_topic(OTHER, partitions=1)
        await wire.produce(TOPIC, [b"x" * 100] * 5)
        await wire.produce(TOPIC, [b"y" * 10] * 3)
        request = wire.connection.request
        for version in (1, 2, 3, 4, 5):
            seen[f"log_dirs_all_v{version}"] = _log_dirs(
                await request(ApiKey.DESCRIBE_LOG_DIRS, version, log_dirs.REQUEST(topics=None)), version)
        seen["log_dirs_some"] = _log_dirs(await request(ApiKey.DESCRIBE_LOG_DIRS, 4, log_dirs.REQUEST(topics=[
            log_dirs.DescribableLogDirTopic(topic=TOPIC, partitions=[0, 9]),
            log_dirs.DescribableLogDirTopic(topic="missing", partitions=[0])])), 4)
        seen["log_dirs_none"] = _log_dirs(await request(ApiKey.DESCRIBE_LOG_DIRS, 4, log_dirs.REQUEST(topics=[])), 4)

        named = [elect.TopicPartitions(topic=TOPIC, partitions=[0, 1, 7]),
                 elect.TopicPartitions(topic="missing", partitions=[0])]
        for version in (0, 1, 2):
            seen[f"preferred_v{version}"] = _elections(await request(ApiKey.ELECT_LEADERS, version, elect.REQUEST(
                election_type=0, topic_partitions=named)))
        seen["unclean"] = _elections(await request(ApiKey.ELECT_LEADERS, 2, elect.REQUEST(
            election_type=1, topic_partitions=named[:1])))
        seen["unknown_type"] = _elections(await request(ApiKey.ELECT_LEADERS, 2, elect.REQUEST(
            election_type=3, topic_partitions=named[:1])))
        seen["every_partition"] = _elections(await request(ApiKey.ELECT_LEADERS, 2, elect.REQUEST(
            election_type=0, topic_partitions=None)))
        seen["no_partition"] = _elections(await request(ApiKey.ELECT_LEADERS, 2, elect.REQUEST(
            election_type=0, topic_partitions=[])))

        def move(*partitions, name=TOPIC):
            return reassign.ReassignableTopic(name=name, partitions=[
                reassign.ReassignablePartition(partition_index=index, replicas=replicas)
                for index, replicas in partitions])
        for version in (0, 1):
            seen[f"reassign_v{version}"] = _reassignments(await request(
                ApiKey.ALTER_PARTITION_REASSIGNMENTS, version, reassign.REQUEST(topics=[
                    move((0, [1]), (1, [2]), (8, [1])), move((0, [1]), name="missing")])))
        seen["reassign_bad_lists"] = _reassignments(await request(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, reassign.REQUEST(allow_replication_factor_change=False, topics=[
                move((0, []), (1, [1, 1])), move((0, [3, 1, 2]), name=OTHER)])))
        seen["cancel_none_under_way"] = _reassignments(await request(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, reassign.REQUEST(topics=[move((0, None))])))
        for label, topics in (("list_all", None), ("list_some", [listing.Topics(name=TOPIC, partition_indexes=[0]),
                                                               listing.Topics(name="missing", partition_indexes=[0])])):
            answer = await request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, listing.REQUEST(topics=topics))
            seen[label] = (answer.error_code, answer.error_message,
                           [(t.name, len(t.partitions)) for t in answer.topics])
    finally:
        await wire.close()
    return seen


def _tools(broker, tmp_path) -> dict:
    seen = {}
    described = run_tool(LOG_DIRS_TOOL, "--bootstrap-server", broker.bootstrap, "--describe",
                         "--topic-list", f"{TOPIC},{OTHER}")
    assert described.returncode == 0, described.stderr
    report = json.loads(described.stdout.splitlines()[-1])
    seen["log_dirs_tool"] = [(b["broker"], [sorted((p["partition"], p["size"], p["offsetLag"], p["isFuture"])
                                                   for p in d["partitions"]) for d in b["logDirs"]])
                             for b in report["brokers"]]
    election = run_tool(ELECTION_TOOL, "--bootstrap-server", broker.bootstrap, "--election-type", "preferred",
                        "--topic", TOPIC, "--partition", "0")
    seen["election_tool"] = (election.returncode, election.stdout.strip())
    plan = tmp_path / f"plan-{broker.kind}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": OTHER, "partition": 0, "replicas": [1]}]}))
    executed = run_tool(REASSIGN_TOOL, "--bootstrap-server", broker.bootstrap, "--execute",
                        "--reassignment-json-file", str(plan))
    verified = run_tool(REASSIGN_TOOL, "--bootstrap-server", broker.bootstrap, "--verify",
                        "--reassignment-json-file", str(plan))
    listed = run_tool(REASSIGN_TOOL, "--bootstrap-server", broker.bootstrap, "--list")
    seen["reassign_tool"] = [(run.returncode, run.stdout.strip().splitlines()[-1])
                             for run in (executed, verified, listed)]
    return seen


@pytest.fixture(scope="module")
def answers(kafka_broker, weir_process, tmp_path_factory) -> dict[str, dict]:
    tmp_path = tmp_path_factory.mktemp("ops-apis")
    return {name: {**asyncio.run(_scenario(broker)), **_tools(broker, tmp_path)}
            for name, broker in (("kafka", kafka_broker), ("weir", weir_process))}


def test_ops_apis_answer_as_kafka(answers):
    weir, kafka = answers["weir"], answers["kafka"]
    assert {key: (weir[key], kafka[key]) for key in kafka if weir.get(key) != kafka[key]} == {}


def test_ops_apis_answers_say_what_a_one_broker_cluster_is(answers):
    """What both must show, so that agreeing on nothing would not pass."""
    seen = answers["weir"]
    sizes = dict(seen["log_dirs_all_v5"][5])[TOPIC]
    assert sizes[0][0] == 0 and sizes[0][1] > 500 and sizes[1] == (1, 0, 0, False)  # real sizes, lag 0
    assert seen["log_dirs_all_v1"][2:4] == (-1, -1) and seen["log_dirs_all_v4"][2:4] == (True, True)
    assert seen["log_dirs_some"][5] == [(TOPIC, [(0, sizes[0][1], 0, False)])]
    assert seen["preferred_v2"][1][1][1][:2] == [(0, 84, "Leader election not needed for topic partition."),
                                                  (1, 84, "Leader election not needed for topic partition.")]
    assert seen["unknown_type"][0] == 42
    assert [p[1] for p in seen["reassign_v1"][3][0][1]] == [0, 39, 3]
    assert seen["cancel_none_under_way"][3] == [(TOPIC, [(0, 85, None)])]
    assert seen["list_all"] == (0, None, [])
