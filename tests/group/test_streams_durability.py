"""Streams groups (KIP-1071) as records in ``__consumer_offsets``, on a real log store with a manual
clock: a restart replays every group as it was (epochs, topology, target and current tasks, static
members) and members go on without a rebalance; sessions are armed again at start-up; a deleted
group stays deleted; a write that fails (full disk) leaves the group as its partition has it.
The records are laid out as Kafka 4.4 lays them out (record types 17-23, version 0)."""

from __future__ import annotations

import asyncio

import pytest

from weir.broker.clock import ManualClock
from weir.broker.group.admin import delete_group
from weir.broker.group.consumer.member import MemberState
from weir.broker.group.streams import records as r
from weir.broker.log import disk
from weir.protocol.errors import Errors
from weir.protocol.messages import streams_group_heartbeat as hb
from tests.txn.test_coordinator import make_context

G, SOURCE, PARTITIONS = "app", "src", 4
SESSION_MS = 45_000
# the first join assigns at once, and every heartbeat may compute a target (the clock stands still)
NO_DELAY = {"group.streams.initial.rebalance.delay.ms": 0, "group.streams.assignment.interval.ms": 0}


def topology() -> object:
    return hb.Topology(epoch=1, subtopologies=[hb.Subtopology(
        subtopology_id="0", source_topics=[SOURCE], source_topic_regex=[], state_changelog_topics=[
            hb.TopicInfo(name=f"{G}-store-changelog", partitions=0, replication_factor=1,
                         topic_configs=[hb.KeyValue(key="cleanup.policy", value="compact")])],
        repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


class Member:
    def __init__(self, context, member_id: str, instance_id: str | None = None, process: str = "p"):
        self.context, self.member_id, self.instance_id, self.process = context, member_id, instance_id, process
        self.epoch = 0
        self.active: dict[str, list[int]] = {}

    async def beat(self, epoch: int | None = None) -> dict:
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        tasks = [hb.TaskIds(subtopology_id=s, partitions=p) for s, p in sorted(self.active.items())]
        request = hb.REQUEST(
            group_id=G, member_id=self.member_id, member_epoch=epoch, endpoint_information_epoch=0,
            instance_id=self.instance_id, rebalance_timeout_ms=30_000 if joining else -1,
            topology=topology() if joining else None, process_id=self.process if joining else None,
            user_endpoint=hb.Endpoint(host="localhost", port=7000) if joining else None,
            client_tags=[hb.KeyValue(key="zone", value="a")] if joining else None,
            active_tasks=[] if joining else tasks, standby_tasks=[], warmup_tasks=[])
        answer = await self.context.groups.streams_group_heartbeat(request, "client", "/127.0.0.1")
        if answer["error_code"] == 0 and epoch >= 0:
            self.epoch = answer["member_epoch"]
            if "tasks" in answer:
                self.active = {s: sorted(p) for s, p in answer["tasks"][0].items()}
        return answer


async def converge(*members: Member, rounds: int = 6) -> None:
    for _ in range(rounds):
        for member in members:
            answer = await member.beat()
            assert answer["error_code"] == 0, answer


async def written(context) -> None:
    """Wait for the writes of members removed by their session deadline."""
    await asyncio.gather(*list(context.groups.streams._tasks))


def stored(context) -> dict:
    """The group as records, which is what a restart replays."""
    return r.records_of(context.groups.streams.groups.get(G))


@pytest.fixture
def context(tmp_path):
    ctx = make_context(tmp_path, ManualClock(), **NO_DELAY)
    ctx.logs.create_topic(SOURCE, PARTITIONS)
    yield ctx
    disk.fill(ctx.data_dir, False)


async def restart(context, tmp_path):
    await context.close()
    again = make_context(tmp_path, ManualClock(), **NO_DELAY)
    again.groups.start()  # as the broker's start-up does: sessions armed, topologies configured
    return again


async def test_a_restart_replays_the_group_and_members_go_on_without_a_rebalance(context, tmp_path):
    a, b = Member(context, "a", process="pa"), Member(context, "b", instance_id="i-b", process="pb")
    await a.beat()
    await b.beat()
    await converge(a, b)
    group = context.groups.streams.groups[G]
    before = stored(context)
    epochs = (group.group_epoch, group.assignment_epoch)
    members = {m.member_id: (m.member_epoch, m.state, m.assigned, m.instance_id, m.process_id, m.user_endpoint,
                             m.client_tags) for m in group.members.values()}
    assert sorted(p for m in (a, b) for p in m.active["0"]) == list(range(PARTITIONS))

    again = await restart(context, tmp_path)
    group = again.groups.streams.groups[G]
    assert stored(again) == before  # the replayed group is the group that was written
    assert (group.group_epoch, group.assignment_epoch) == epochs
    assert {m.member_id: (m.member_epoch, m.state, m.assigned, m.instance_id, m.process_id, m.user_endpoint,
                          m.client_tags) for m in group.members.values()} == members
    assert group.topology is not None and group.topology.epoch == 1
    a.context = b.context = again
    for member in (a, b):
        answer = await member.beat()
        assert (answer["error_code"], answer["member_epoch"]) == (0, members[member.member_id][0])
        assert "tasks" not in answer  # unchanged: the member keeps what it has
    assert (group.group_epoch, group.assignment_epoch) == epochs  # no rebalance
    await again.close()


async def test_sessions_are_armed_at_start_up_and_a_removal_is_written(context, tmp_path):
    a, b = Member(context, "a", process="pa"), Member(context, "b", process="pb")
    await a.beat()
    await b.beat()
    await converge(a, b)
    again = await restart(context, tmp_path)
    a.context = again
    again.clock.advance(SESSION_MS // 2)
    assert (await a.beat())["error_code"] == 0
    again.clock.advance(SESSION_MS // 2 + 1)  # b never heartbeat after the restart
    await written(again)
    assert set(again.groups.streams.groups[G].members) == {"a"}
    third = await restart(again, tmp_path)
    assert set(third.groups.streams.groups[G].members) == {"a"}
    await third.close()


async def test_a_static_member_that_left_keeps_its_instance_across_a_restart(context, tmp_path):
    s = Member(context, "s1", instance_id="inst", process="ps")
    await s.beat()
    await converge(s)
    assert (await s.beat(-2))["error_code"] == 0
    again = await restart(context, tmp_path)
    assert again.groups.streams.groups[G].members["s1"].member_epoch == -2
    successor = Member(again, "s2", instance_id="inst", process="ps")
    answer = await successor.beat()
    assert answer["error_code"] == 0 and successor.active == {"0": list(range(PARTITIONS))}
    await again.close()


async def test_a_deleted_group_stays_deleted(context, tmp_path):
    a = Member(context, "a")
    await a.beat()
    await converge(a)
    assert (await a.beat(-1))["error_code"] == 0
    assert await delete_group(context.groups, G) == Errors.NONE
    again = await restart(context, tmp_path)
    assert G not in again.groups.streams.groups and not again.groups.holds(G)
    a.context = again
    assert (await a.beat())["error_code"] == Errors.GROUP_ID_NOT_FOUND
    await again.close()


async def test_a_failed_write_leaves_the_group_as_its_partition_has_it(context, tmp_path):
    a = Member(context, "a", process="pa")
    await a.beat()
    await converge(a)
    before = stored(context)
    disk.fill(context.data_dir, True)
    b = Member(context, "b", process="pb")
    assert (await b.beat())["error_code"] == Errors.COORDINATOR_NOT_AVAILABLE
    assert stored(context) == before and "b" not in context.groups.streams.groups[G].members
    assert (await a.beat(-1))["error_code"] == Errors.COORDINATOR_NOT_AVAILABLE  # a's leave is not written
    assert stored(context) == before
    assert await delete_group(context.groups, G) == Errors.NON_EMPTY_GROUP  # a is back: the log has it
    disk.fill(context.data_dir, False)
    assert (await a.beat())["error_code"] == 0  # its session was armed again
    assert (await b.beat())["error_code"] == 0
    again = await restart(context, tmp_path)
    assert set(again.groups.streams.groups[G].members) == {"a", "b"}
    await again.close()


def test_records_are_laid_out_as_kafkas():
    key, value = r.StreamsGroupRecord(r.GROUP_METADATA, "g").encode()
    assert (key, value) == (b"\x00\x11\x00\x01g", None)
    key, _ = r.StreamsGroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, "g", "m").encode()
    assert key == b"\x00\x16\x00\x01g\x00\x01m"
    assert r.is_streams_group_key(key) and not r.is_streams_group_key(b"\x00\x08\x00\x01g")
    metadata = r.StreamsGroupRecord(r.GROUP_METADATA, "g", value=r.GroupMetadataValue(
        epoch=3, metadata_hash=0, validated_topology_epoch=1,
        last_assignment_configs=[r.KeyValue(key="num.standby.replicas", value="0")]))
    # version 0, epoch 3, hash 0, two tagged fields: tag 0 (4 bytes: 1), tag 1 (one key-value pair)
    pair = b"\x02" + b"\x15num.standby.replicas" + b"\x020" + b"\x00"
    assert metadata.encode()[1] == (b"\x00\x00" + b"\x00\x00\x00\x03" + bytes(8) + b"\x02" + b"\x00\x04\x00\x00\x00\x01"
                                    + b"\x01" + bytes([len(pair)]) + pair)
    current = r.StreamsGroupRecord(r.CURRENT_MEMBER_ASSIGNMENT, "g", "m", r.CurrentMemberAssignmentValue(
        member_epoch=5, previous_member_epoch=4, state=2,
        active_tasks=[r.EpochTaskIds(subtopology_id="0", partitions=[0, 1], assignment_epochs=[2, 5])],
        standby_tasks=[r.EpochTaskIds(subtopology_id="1", partitions=[3])], warmup_tasks=[],
        active_tasks_pending_revocation=[], standby_tasks_pending_revocation=[], warmup_tasks_pending_revocation=[]))
    assert r.decode(*current.encode()) == current
    assert r.decode(*metadata.encode()) == metadata


def test_streams_member_states_take_kafkas_record_values():
    group = r.StreamsGroup(G)
    from weir.broker.group.streams.group import StreamsMember
    group.members["m"] = StreamsMember("m", state=MemberState.UNREVOKED_PARTITIONS, member_epoch=3,
                                       assigned={"0": frozenset({1})}, assignment_epochs={("0", 1): 2})
    current = r.records_of(group)[(r.CURRENT_MEMBER_ASSIGNMENT, "m")]
    assert current.value.state == 2  # Kafka's streams UNREVOKED_TASKS; the consumer group's is 1
    assert current.value.active_tasks[0].assignment_epochs == [2]
    replayed: dict = {}
    for record in r.changes({}, r.records_of(group)):
        r.replay(replayed, r.decode(*record.encode()))
    assert r.records_of(replayed[G]) == r.records_of(group)


async def test_a_member_whose_removal_failed_to_write_expires_again(context, tmp_path):
    a = Member(context, "a")
    await a.beat()
    await converge(a)
    disk.fill(context.data_dir, True)
    context.clock.advance(SESSION_MS + 1)
    await written(context)  # the removal's write fails: the group is reloaded
    assert "a" in context.groups.streams.groups[G].members
    disk.fill(context.data_dir, False)
    context.clock.advance(SESSION_MS + 1)  # its session was armed again by the reload
    await written(context)
    assert not context.groups.streams.groups[G].members
    again = await restart(context, tmp_path)
    assert not again.groups.streams.groups[G].members
    await again.close()


async def test_a_delete_that_fails_to_write_leaves_the_group(context, tmp_path):
    a = Member(context, "a")
    await a.beat()
    await converge(a)
    assert (await a.beat(-1))["error_code"] == 0
    before = stored(context)
    disk.fill(context.data_dir, True)
    assert await delete_group(context.groups, G) == Errors.COORDINATOR_NOT_AVAILABLE
    assert stored(context) == before
    disk.fill(context.data_dir, False)
    again = await restart(context, tmp_path)
    assert r.records_of(again.groups.streams.groups[G]) == before
    await again.close()
