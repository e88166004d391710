"""The share group coordinator on a manual clock: joining, epochs, Kafka's errors, the simple
assignor, session timeouts, leaving, and the group rebuilt from its records alone."""

from types import SimpleNamespace

import pytest

from weir.broker.clock import ManualClock
from weir.broker.group.share import records as share_records
from weir.broker.group.share.assignor import assign
from weir.broker.group.share.coordinator import ShareGroupCoordinator
from weir.broker.group.share.group import ShareGroupState
from weir.protocol.errors import Errors
from tests.share.test_share_partition import append
from tests.txn.test_coordinator import make_context

G = "jobs"


@pytest.fixture
def context(tmp_path):
    ctx = make_context(tmp_path, ManualClock())
    ctx.logs.create_topic("other", 3)
    return ctx


@pytest.fixture
def written(context):
    """Every record the coordinator applied, in order."""
    records = []
    share = context.groups.share
    original = share.apply

    async def apply(group_id, batch):
        records.extend(batch)
        return await original(group_id, batch)
    share.apply = apply
    return records


async def beat(context, member, epoch, topics=None, group=G):
    request = SimpleNamespace(group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                              subscribed_topic_names=topics)
    return await context.groups.share.heartbeat(request, "client", "/127.0.0.1")


def tid(context, topic):
    return context.logs.topics[topic].topic_id


async def test_a_member_joins_and_gets_every_partition_of_its_topics(context):
    answer = await beat(context, "m1", 0, ["data", "other"])
    assert (answer["error_code"], answer["member_epoch"]) == (Errors.NONE, 2)  # as Kafka 4.4: groups start at 1
    assert answer["assignment"] == {tid(context, "data"): (0, 1), tid(context, "other"): (0, 1, 2)}
    assert answer["heartbeat_interval_ms"] == 5000
    again = await beat(context, "m1", 2)
    assert (again["member_epoch"], "assignment" in again) == (2, False)  # unchanged: not sent again
    # the share-partitions are initialized from the assignment on; the first read resolves their start
    assert {key: state.start_offset for key, state in context.share_partitions.stored.items()} == {
        (G, tid(context, "data"), 0): -1, (G, tid(context, "data"), 1): -1,
        **{(G, tid(context, "other"), i): -1 for i in range(3)}}


async def test_a_topic_created_after_the_subscription_is_assigned(context):
    assert (await beat(context, "m1", 0, ["later"]))["assignment"] == {}
    context.logs.create_topic("later", 2)
    answer = await beat(context, "m1", 2)
    assert (answer["member_epoch"], answer["assignment"]) == (3, {tid(context, "later"): (0, 1)})


async def test_members_share_out_the_partitions(context):
    await beat(context, "m1", 0, ["data"])
    second = await beat(context, "m2", 0, ["data"])
    assert (second["member_epoch"], second["assignment"]) == (3, {tid(context, "data"): (1,)})
    first = await beat(context, "m1", 2)  # its epoch moves to the new assignment epoch, its partitions too
    assert (first["member_epoch"], first["assignment"]) == (3, {tid(context, "data"): (0,)})
    group = context.groups.share.groups[G]
    assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 3, ShareGroupState.STABLE)
    # the epoch before the last one is accepted (the member may have missed the answer), as in Kafka
    assert (await beat(context, "m1", 2))["member_epoch"] == 3


async def test_kafkas_errors(context):
    await beat(context, "m1", 0, ["data"])
    await beat(context, "m2", 0, ["data"])  # m1 is at 2, the group at 3
    ahead = await beat(context, "m1", 3)
    assert (ahead["error_code"], ahead["error_message"]) == (
        Errors.FENCED_MEMBER_EPOCH, "The share group member has a greater member epoch (3) than the one known by "
                                    "the group coordinator (2). The member must abandon all its partitions and rejoin.")
    behind = await beat(context, "m2", 2)
    assert (behind["error_code"], behind["error_message"]) == (
        Errors.FENCED_MEMBER_EPOCH, "The share group member has a smaller member epoch (2) than the one known by the "
                                    "group coordinator (3), and it does not match the previous member epoch (0). "
                                    "The member must abandon all its partitions and rejoin.")
    assert (await beat(context, "ghost", 1))["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert (await beat(context, "ghost", -1))["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert (await beat(context, "m1", 1, group="nobody")) == {"error_code": Errors.GROUP_ID_NOT_FOUND,
                                                             "error_message": "Share group nobody not found."}
    assert (await beat(context, "", 0, ["data"]))["error_code"] == Errors.INVALID_REQUEST
    assert (await beat(context, "m3", 0, None))["error_code"] == Errors.INVALID_REQUEST
    assert (await beat(context, "m3", -2))["error_code"] == Errors.INVALID_REQUEST
    assert (await beat(context, "m1", 2))["error_code"] == Errors.NONE  # nothing above disturbed the group


async def test_leaving_and_a_session_ending_remove_the_member(context):
    await beat(context, "m1", 0, ["data"])
    await beat(context, "m2", 0, ["data"])
    left = await beat(context, "m1", -1)
    assert (left["member_epoch"], left["heartbeat_interval_ms"]) == (-1, 0)  # as Kafka answers a leave
    group = context.groups.share.groups[G]
    assert (set(group.members), group.group_epoch) == ({"m2"}, 4)
    context.clock.advance(45_000 - 1)
    assert set(group.members) == {"m2"}
    context.clock.advance(1)  # m2's session (share.session.timeout.ms, 45 s) ends
    assert (group.members, group.state, group.group_epoch) == ({}, ShareGroupState.EMPTY, 5)


async def test_a_session_ending_gives_the_members_records_back(context):
    partition = context.logs.partition("data", 0)
    await beat(context, "m1", 0, ["data"])
    sp = context.share_partitions.get(G, tid(context, "data"), 0)
    assert sp.start_offset == partition.log_end_offset
    await append(context, 2)
    sp.acquire("m1", 10, context.share_partitions.limits(G), strict=True)
    context.clock.advance(45_000)
    assert [r.state.name for r in sp.in_flight.values()] == ["AVAILABLE", "AVAILABLE"]


async def test_the_records_rebuild_the_same_group(context, written):
    await beat(context, "m1", 0, ["data"])
    await beat(context, "m2", 0, ["data", "other"])
    assert (await beat(context, "m1", 2, ["data", "other"]))["member_epoch"] == 4
    await beat(context, "m2", -1)
    rebuilt = ShareGroupCoordinator(context, context.share_partitions, context.groups.log)
    for record in written:
        rebuilt.replay(record)
    live, replayed = context.groups.share.groups[G], rebuilt.groups[G]
    assert vars(replayed) == vars(live)
    # and so does what __consumer_offsets holds, decoded (start-up's replay)
    from_log = ShareGroupCoordinator(context, context.share_partitions, context.groups.log)
    for entry in context.groups.log.replay():
        if entry.key is not None and share_records.is_share_group_key(entry.key):
            from_log.replay(share_records.decode(entry.key, entry.value))
    assert vars(from_log.groups[G]) == vars(live)


@pytest.mark.parametrize("partitions,members,shares", [
    (3, 2, [[0, 2], [1]]),                  # fewer members: dealt out
    (4, 4, [[0], [1], [2], [3]]),
    (2, 3, [[0, 1], [0], [1]]),             # more members: each partition read by ceil(3 / 2) = 2
    (3, 5, [[0, 2], [0], [1], [1], [2]]),   # of them, so one member reads two
    (1, 3, [[0], [0], [0]]),                # the bar's three workers on one partition
])
def test_the_simple_assignor_balances_as_kafka_4_4(partitions, members, shares):
    # Kafka 4.4.0's SimpleHomogeneousAssignmentBuilder from an empty group gives these (its member
    # order is a hash set's; Weir's is the member ids')
    ids = [f"m{i}" for i in range(members)]
    target = assign([(m, ("t",)) for m in ids], {"t": (b"t" * 16, partitions)})
    assert [list(target[m][b"t" * 16]) for m in ids] == shares


def test_the_simple_assignor_is_sticky():
    topic = b"t" * 16
    topics = {"t": (topic, 6)}
    ids = ["m0", "m1"]
    before = assign([(m, ("t",)) for m in ids], topics)
    assert before == {"m0": {topic: (0, 2, 4)}, "m1": {topic: (1, 3, 5)}}
    after = assign([(m, ("t",)) for m in [*ids, "m2"]], topics, before)
    # each keeps two of its three; the newcomer gets the one each gave up
    assert after == {"m0": {topic: (0, 2)}, "m1": {topic: (1, 3)}, "m2": {topic: (4, 5)}}
    # computed again from itself, a balanced assignment stays as it is (no epoch bump per heartbeat)
    assert assign([(m, ("t",)) for m in [*ids, "m2"]], topics, after) == after
    # a member that left: its partitions go, the others keep theirs
    assert assign([(m, ("t",)) for m in ["m0", "m2"]], topics, after) == {
        "m0": {topic: (0, 1, 2)}, "m2": {topic: (3, 4, 5)}}


def test_the_simple_assignor_per_topic_subscribers():
    target = assign([("a", ("t", "u")), ("b", ("u",))], {"t": (b"t" * 16, 2), "u": (b"u" * 16, 2)})
    assert target == {"a": {b"t" * 16: (0, 1), b"u" * 16: (0,)}, "b": {b"u" * 16: (1,)}}
