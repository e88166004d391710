"""kill -9 of Weir under a streams group (KIP-1071), members sent raw (our codec): the restarted broker
replays the group from ``__consumer_offsets`` and every member heartbeating with its member id and
epoch goes on at the same epoch with the same tasks (no UNKNOWN_MEMBER_ID, no rebalance); a group
deleted before the crash stays deleted.

And the records themselves: Kafka's own DumpLogSegments (``--offsets-decoder``) reads Weir's
``__consumer_offsets`` segments, and for the same scenario (a member joins, gets its tasks, leaves,
the group is deleted) decodes the same kinds of streams group records from Weir's as from Kafka
4.4.0's."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import delete_groups, streams_group_describe
from reference.kafka import SHARED_TEST_SETTINGS
from tests.broker_process import BrokerProcess
from tests.features.raw import ask
from tests.reference.test_differential_consumer_heartbeat import coordinator_ready, topic_assignable
from tests.reference.test_differential_streams_groups import PARTITIONS, Member, _until, topology
from tests.tools.tools import create_topics, run_tool

DUMP = "org.apache.kafka.tools.DumpLogSegments"
STREAMS_RECORD_TYPES = {"17": "GroupMetadata", "19": "MemberMetadata", "20": "TargetAssignmentMetadata",
                        "21": "TargetAssignmentMember", "22": "CurrentMemberAssignment", "23": "Topology"}
# a session long enough that a loaded machine restarting the broker never ends one
SETTINGS = {**SHARED_TEST_SETTINGS, "group.streams.session.timeout.ms": "30000"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("streams-restart") / "data", overrides=SETTINGS).start()
    yield process
    process.stop()


def describe(broker, group: str):
    described = ask(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, streams_group_describe.REQUEST(
        group_ids=[group], include_authorized_operations=False)).groups[0]
    if described.error_code:
        return described.error_code
    members = {m.member_id: (m.member_epoch, m.instance_id, m.process_id,
                             sorted((t.subtopology_id, sorted(t.partitions)) for t in m.assignment.active_tasks))
               for m in described.members}
    subtopologies = sorted(s.subtopology_id for s in described.topology.subtopologies or [])
    return described.group_epoch, described.assignment_epoch, described.group_state, members, subtopologies


def start_group(broker, tag: str, instance: str | None = None) -> tuple[str, list[Member]]:
    suffix = uuid.uuid4().hex[:8]
    source, app = f"{tag}-src-{suffix}", f"{tag}-{suffix}"
    create_topics(broker.bootstrap, NewTopic(source, PARTITIONS, 1))
    coordinator_ready(broker, app)
    members = [Member(broker, app, source, "process-a"), Member(broker, app, source, "process-b")]
    extra = [{}, {"instance_id": instance} if instance else {}]
    for member, changes in zip(members, extra, strict=True):
        member.changes = changes
        assert member.beat(0, topology(source, app), **changes).error_code == 0

    def balanced():
        for member in members:
            assert member.beat(**member.changes).error_code == 0
        return True if [m.task_count() for m in members] == [PARTITIONS, PARTITIONS] else None
    _until("an even split", balanced)
    _until("a stable group", lambda: True if (balanced(), describe(broker, app)[2])[1] == "Stable" else None)
    return app, members


def test_a_member_keeps_its_id_epoch_and_tasks_across_kill_9(broker):
    app, members = start_group(broker, "durable", instance="static-b")
    before = describe(broker, app)
    assert {m.member_id: m.epoch for m in members} == {k: v[0] for k, v in before[3].items()}

    broker.kill()
    broker.start()
    assert describe(broker, app) == before  # replayed: epochs, members, static instance, tasks, topology
    for member in members:
        tasks = dict(member.active)
        answer = member.beat(**member.changes)
        assert (answer.error_code, answer.member_epoch) == (0, member.epoch), answer.error_message
        assert answer.active_tasks is None and member.active == tasks  # unchanged: nothing to hand over
    assert describe(broker, app)[:2] == before[:2], "no rebalance after the restart"


def test_a_deleted_group_stays_deleted_across_kill_9(broker):
    app, members = start_group(broker, "deleted")
    for member in members:
        assert member.beat(-1).error_code == 0
    deleted = ask(broker, ApiKey.DELETE_GROUPS, 2, delete_groups.REQUEST(groups_names=[app]))
    assert [r.error_code for r in deleted.results] == [0]
    broker.kill()
    broker.start()
    assert describe(broker, app) == 69  # GROUP_ID_NOT_FOUND
    assert members[0].beat(members[0].epoch).error_code == 69  # not UNKNOWN_MEMBER_ID: no group at all


def record_kinds(broker, group: str) -> list[str]:
    """The streams group records of ``group`` in the broker's ``__consumer_offsets`` segments, as
    Kafka's DumpLogSegments decodes them: the kind of each, tombstones marked, in log order."""
    data = Path(broker.data_dir)
    segments = sorted(str(path) for path in data.glob("__consumer_offsets-*/*.log") if path.stat().st_size)
    dumped = run_tool(DUMP, "--offsets-decoder", "--files", ",".join(segments), timeout=120)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    kinds = []
    for line in dumped.stdout.splitlines():
        if " key: " not in line or " payload: " not in line:
            continue
        key, payload = line.split(" key: ", 1)[1].split(" payload: ", 1)
        key = json.loads(key)
        if key["type"] in STREAMS_RECORD_TYPES and key["data"]["groupId"] == group:
            kinds.append(f'{STREAMS_RECORD_TYPES[key["type"]]}{" tombstone" if payload.strip() == "<DELETE>" else ""}')
    return kinds


def dump_scenario(broker) -> list[str]:
    suffix = uuid.uuid4().hex[:8]
    source, app = f"dump-src-{suffix}", f"dump-{suffix}"
    create_topics(broker.bootstrap, NewTopic(source, PARTITIONS, 1))
    topic_assignable(broker, source)  # Kafka's group coordinator sees the topic a moment after
    coordinator_ready(broker, app)
    member = Member(broker, app, source, "process-d")
    plain = topology(source, app)
    assert member.beat(0, plain).error_code == 0
    _until("the member's tasks", lambda: True if (member.beat(), member.task_count())[1] == 2 * PARTITIONS else None)
    assert member.beat(-1).error_code == 0
    deleted = ask(broker, ApiKey.DELETE_GROUPS, 2, delete_groups.REQUEST(groups_names=[app]))
    assert [r.error_code for r in deleted.results] == [0]
    return _until("the group's tombstones in the log", lambda: (lambda kinds: kinds if any(
        "tombstone" in k for k in kinds) else None)(record_kinds(broker, app)))


def test_kafkas_dump_tool_decodes_the_same_streams_records_from_both(weir_process, kafka_broker):
    weir, kafka = dump_scenario(weir_process), dump_scenario(kafka_broker)
    assert sorted(set(weir)) == sorted(set(kafka)), (weir, kafka)
    # the join, and the leave and delete, in the same order; how many epochs the first assignment
    # takes in between depends on when Kafka's metadata image shows the internal topics it created
    joined = weir.index("CurrentMemberAssignment") + 1
    assert weir[:joined] == kafka[:kafka.index("CurrentMemberAssignment") + 1], (weir, kafka)
    left = weir.index("CurrentMemberAssignment tombstone")
    assert weir[left:] == kafka[kafka.index("CurrentMemberAssignment tombstone"):], (weir, kafka)
