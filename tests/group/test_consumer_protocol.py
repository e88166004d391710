"""The KIP-848 consumer group coordinator against a real log store, on a manual clock: epochs,
incremental reconciliation, deadlines, static members, regex subscriptions, topic changes, and
recovery by replay."""

import asyncio
from types import SimpleNamespace

import pytest

from weir.broker import handlers  # noqa: F401  (registers the handlers)
from weir.broker.clock import ManualClock
from weir.broker.dispatcher import HANDLERS
from weir.broker.features import GROUP_VERSION
from weir.protocol.api_keys import ApiKey
from weir.broker.group.configs import GroupConfigs
from weir.broker.group.consumer.member import MemberState
from weir.protocol.errors import Errors, KafkaError
from tests.group.consumer_driver import G, Member, request
from tests.txn.test_coordinator import make_context

SESSION, HEARTBEAT = 45_000, 5_000


@pytest.fixture
def context(tmp_path):
    ctx = make_context(tmp_path, ManualClock())
    ctx.logs.create_topic("wide", 6)
    yield ctx


def group_of(context):
    return context.groups.consumer.groups[G]


def tid(context, topic):
    return context.logs.topics[topic].topic_id


async def converge(members, rounds=6):
    """Heartbeat every member a few rounds: each revokes what it was told to, then gets the rest."""
    for _ in range(rounds):
        for member in members:
            answer = await member.beat()
            assert answer["error_code"] == 0, answer


def assert_disjoint_and_complete(context, members, topic, count):
    owned = [p for m in members for p in m.partitions()]
    assert len(owned) == len(set(owned)), "a partition owned twice"
    assert set(owned) == {(tid(context, topic), p) for p in range(count)}


async def test_first_member_joins_gets_every_partition_at_epoch_2(context):
    # Kafka 4.3: a new group is at epoch 1 and the first member's subscription bumps it to 2
    a = Member(context, "a", topics=("wide",))
    answer = await a.join()
    assert (answer["error_code"], answer["member_id"], answer["member_epoch"],
            answer["heartbeat_interval_ms"]) == (0, "a", 2, HEARTBEAT)
    assert answer["assignment"] == {tid(context, "wide"): frozenset(range(6))}
    group = group_of(context)
    assert (group.group_epoch, group.target_epoch, group.state.value) == (2, 2, "Stable")
    # a heartbeat with nothing new carries no assignment
    assert (await a.beat())["assignment"] is None


async def test_a_partition_moves_only_after_its_owner_revokes_it(context):
    a, b = Member(context, "a", topics=("wide",)), Member(context, "b", topics=("wide",))
    await a.join()
    answer = await b.join()
    assert answer["member_epoch"] == 3 and answer["assignment"] == {}  # the 3 it gets are still a's
    assert group_of(context).members["b"].state == MemberState.UNRELEASED_PARTITIONS
    answer = await a.beat()  # a is told to keep 3 and revoke 3, at its old epoch
    assert answer["member_epoch"] == 2 and len(a.partitions()) == 3
    assert group_of(context).members["a"].state == MemberState.UNREVOKED_PARTITIONS
    assert (await b.beat())["assignment"] is None  # still held by a: nothing yet
    answer = await a.beat()  # a's heartbeat shows the 3 gone: it moves to epoch 3
    assert answer["member_epoch"] == 3 and group_of(context).members["a"].state == MemberState.STABLE
    answer = await b.beat()
    assert len(b.partitions()) == 3
    assert_disjoint_and_complete(context, [a, b], "wide", 6)
    assert group_of(context).state.value == "Stable"


async def test_three_members_balance_and_a_leaver_moves_only_its_partitions(context):
    members = [Member(context, name, topics=("wide",)) for name in "abc"]
    for m in members:
        await m.join()
        await converge(members[:members.index(m) + 1])
    assert sorted(len(m.partitions()) for m in members) == [2, 2, 2]
    before = {m.member_id: m.partitions() for m in members}
    answer = await members[2].leave()
    assert (answer["error_code"], answer["member_epoch"]) == (0, -1)
    await converge(members[:2])
    assert_disjoint_and_complete(context, members[:2], "wide", 6)
    for m in members[:2]:
        assert before[m.member_id] <= m.partitions() and len(m.partitions()) == 3


async def test_epoch_errors_as_kafka_answers(context):
    a = Member(context, "a", topics=("wide",))
    await a.join()
    assert (await a.send(request("a", 5, owned={})))["error_code"] == Errors.FENCED_MEMBER_EPOCH
    assert (await a.send(request("nobody", 1, owned={})))["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert (await a.send(request("a", 1, owned={}, group="no-such")))["error_code"] == Errors.GROUP_ID_NOT_FOUND
    bad = await a.send(request("a", -3))
    assert (bad["error_code"], bad["error_message"]) == (Errors.INVALID_REQUEST, "MemberEpoch is invalid.")
    first = await a.send(request("x", 0, topics=["wide"], owned={}))
    assert first["error_message"] == "RebalanceTimeoutMs must be provided in first request."
    regex = await a.send(request("x", 0, regex="(", owned={}, rebalance_timeout=1000))
    assert regex["error_code"] == Errors.INVALID_REGULAR_EXPRESSION
    assignor = await a.send(request("x", 0, topics=["wide"], owned={}, rebalance_timeout=1000, assignor="sticky"))
    assert (assignor["error_code"], assignor["error_message"]) == (
        Errors.UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not supported. Supported assignors: uniform, range.")


async def test_the_previous_epoch_is_accepted_when_the_bump_was_lost(context):
    a, b = Member(context, "a", topics=("wide",)), Member(context, "b", topics=("wide",))
    await a.join()
    await b.join()
    await converge([a, b])
    c = Member(context, "c", topics=("wide",))
    await c.join()
    epoch_before = a.epoch
    await converge([a, b, c])
    assert a.epoch > epoch_before
    # the answer with the new epoch got lost: the member comes back with the previous one
    answer = await a.send(request("a", epoch_before, owned={t: set(p) for t, p in
                                                            group_of(context).members["a"].assigned.items()}))
    assert answer["error_code"] == 0 and answer["member_epoch"] == a.epoch


async def test_session_timeout_removes_the_member(context):
    a, b = Member(context, "a", topics=("wide",)), Member(context, "b", topics=("wide",))
    await a.join()
    await b.join()
    await converge([a, b])
    epoch = group_of(context).group_epoch
    context.clock.advance(SESSION - 1)
    await a.beat()
    context.clock.advance(2)  # b's session is over; a just renewed its own
    await _settle(context)
    assert set(group_of(context).members) == {"a"} and group_of(context).group_epoch == epoch + 1
    await converge([a])
    assert len(a.partitions()) == 6


async def test_the_groups_own_session_timeout_and_heartbeat_interval_apply(context):
    """Group configs (kafka-configs --entity-type groups) override the broker's group.consumer.* for one group."""
    context.group_configs.replace(G, {"consumer.session.timeout.ms": "55000", "consumer.heartbeat.interval.ms": "7000"})
    reloaded = GroupConfigs(context.data_dir, context.config)
    reloaded.load()  # kept on disk, as Kafka keeps them in its metadata log
    assert reloaded.current(G) == context.group_configs.current(G)
    a, b = Member(context, "a", topics=("wide",)), Member(context, "b", topics=("wide",))
    assert (await a.join())["heartbeat_interval_ms"] == 7000
    await b.join()
    await converge([a, b])
    context.clock.advance(SESSION + 1)  # past the broker's session timeout, within the group's
    await a.beat()
    await _settle(context)
    assert set(group_of(context).members) == {"a", "b"}
    context.clock.advance(55_000 - SESSION)  # b's session, the group's 55 s, is over
    await _settle(context)
    assert set(group_of(context).members) == {"a"}
    context.group_configs.replace(G, {})  # back to the broker's settings
    assert (await a.beat())["heartbeat_interval_ms"] == HEARTBEAT


async def test_a_member_that_does_not_revoke_in_time_is_removed(context):
    a, b = Member(context, "a", topics=("wide",)), Member(context, "b", topics=("wide",))
    await a.join(rebalance_timeout=10_000)
    await b.join()
    await a.beat()  # told to revoke 3
    assert group_of(context).members["a"].state == MemberState.UNREVOKED_PARTITIONS
    for _ in range(3):  # a keeps heartbeating but never lets go
        context.clock.advance(4_000)
        await a.send(request("a", a.epoch, owned={tid(context, "wide"): set(range(6))}))
        await b.beat()
    await _settle(context)
    assert "a" not in group_of(context).members
    await converge([b])
    assert len(b.partitions()) == 6


async def test_static_member_leaves_with_minus_2_and_comes_back_with_its_partitions(context):
    a = Member(context, "a", topics=("wide",), instance="i-1")
    b = Member(context, "b", topics=("wide",))
    await a.join()
    await b.join()
    await converge([a, b])
    held, epoch = a.partitions(), group_of(context).group_epoch
    assert (await a.leave(-2))["member_epoch"] == -2
    assert group_of(context).members["a"].member_epoch == -2 and group_of(context).group_epoch == epoch
    other = Member(context, "a2", topics=("wide",), instance="i-1")
    answer = await other.join()
    assert answer["error_code"] == 0 and other.partitions() == held
    assert set(group_of(context).members) == {"a2", "b"} and group_of(context).group_epoch == epoch
    # a second instance with the same id while a2 is in: refused
    third = Member(context, "a3", topics=("wide",), instance="i-1")
    assert (await third.join())["error_code"] == Errors.UNRELEASED_INSTANCE_ID
    assert (await a.send(request("a", 3, owned={}, instance="i-1")))["error_code"] == Errors.FENCED_INSTANCE_ID


async def test_regex_subscription_follows_topics_created(context):
    a = Member(context, "a", topics=(), regex="wid.*")
    await a.join()
    assert a.partitions() == {(tid(context, "wide"), p) for p in range(6)}
    context.logs.create_topic("widest", 2)
    await converge([a])
    assert {t for t, _ in a.partitions()} == {tid(context, "wide"), tid(context, "widest")}
    assert len(a.partitions()) == 8


async def test_added_partitions_are_assigned(context):
    a = Member(context, "a", topics=("wide",))
    await a.join()
    context.logs.add_partitions("wide", 9)
    await converge([a])
    assert len(a.partitions()) == 9


async def test_restart_recovers_members_epochs_and_partitions_without_a_rebalance(context, tmp_path):
    a, b = Member(context, "a", topics=("wide",)), Member(context, "b", topics=("wide",))
    await a.join()
    await b.join()
    await converge([a, b])
    group = group_of(context)
    before = (group.group_epoch, group.target_epoch,
              {m: (x.member_epoch, x.assigned) for m, x in group.members.items()})
    await context.close()
    again = make_context(tmp_path, ManualClock())
    group = again.groups.consumer.groups[G]
    assert (group.group_epoch, group.target_epoch,
            {m: (x.member_epoch, x.assigned) for m, x in group.members.items()}) == before
    a.context = b.context = again
    for m in (a, b):
        answer = await m.beat()
        assert answer["error_code"] == 0 and answer["member_epoch"] == before[2][m.member_id][0]
    assert again.groups.consumer.groups[G].group_epoch == before[0]  # no rebalance
    await again.close()


async def test_offset_commit_and_fetch_check_the_member_epoch(context):
    a = Member(context, "a", topics=("wide",))
    await a.join()
    groups = context.groups
    groups.validate_offset_commit(G, "a", None, a.epoch, transactional=False, api_version=9)
    for member, epoch, version, code in [("a", a.epoch + 1, 9, Errors.STALE_MEMBER_EPOCH),
                                         ("zz", a.epoch, 9, Errors.UNKNOWN_MEMBER_ID),
                                         ("a", a.epoch, 8, Errors.UNSUPPORTED_VERSION),
                                         ("", -1, 9, Errors.UNKNOWN_MEMBER_ID)]:  # not while it has members
        with pytest.raises(KafkaError) as caught:
            groups.validate_offset_commit(G, member, None, epoch, transactional=False, api_version=version)
        assert caught.value.code == code
    # KIP-1251: an older epoch still commits the partitions the member held since then; one partition
    # it did not hold refuses the whole commit, as Kafka's validator throws out of the request
    b = Member(context, "b", topics=("wide",))
    await b.join()
    await converge([a, b])
    assert a.epoch == 3 and len(a.partitions()) == 3
    kept = sorted(p for _, p in a.partitions())
    given_up = sorted(set(range(6)) - set(kept))
    groups.validate_offset_commit(G, "a", None, 2, transactional=False, api_version=9,
                                  partitions=[("wide", p) for p in kept])
    for transactional, code in [(False, Errors.STALE_MEMBER_EPOCH), (True, Errors.ILLEGAL_GENERATION)]:
        with pytest.raises(KafkaError) as caught:
            groups.validate_offset_commit(G, "a", None, 2, transactional=transactional, api_version=9,
                                          partitions=[("wide", kept[0]), ("wide", given_up[0])])
        assert caught.value.code == code
    member_b = group_of(context).members["b"]
    assert {member_b.assigned_at(tid(context, "wide"), p) for p in given_up} == {3}
    with pytest.raises(KafkaError) as caught:  # b's partitions are from epoch 3: 2 is too old for them
        groups.validate_offset_commit(G, "b", None, 2, transactional=False, api_version=9,
                                      partitions=[("wide", given_up[0])])
    assert caught.value.code == Errors.STALE_MEMBER_EPOCH
    # TxnOffsetCommit (KIP-447): a zombie's epoch is ILLEGAL_GENERATION; no group metadata at all passes
    with pytest.raises(KafkaError) as caught:
        groups.validate_offset_commit(G, "a", None, a.epoch + 1, transactional=True)
    assert caught.value.code == Errors.ILLEGAL_GENERATION
    groups.validate_offset_commit(G, "", None, -1, transactional=True, partitions=[("wide", 0)])
    consumer = groups.consumer
    consumer.validate_offset_fetch(group_of(context), None, -1)
    with pytest.raises(KafkaError) as caught:
        consumer.validate_offset_fetch(group_of(context), "a", a.epoch - 1)
    assert caught.value.code == Errors.STALE_MEMBER_EPOCH


async def test_group_version_0_answers_unsupported_version(context):
    context.features.update([(GROUP_VERSION, 0, 2)], validate_only=False)
    answer = await HANDLERS[ApiKey.CONSUMER_GROUP_HEARTBEAT].fn(
        context, SimpleNamespace(api_version=1, client_id="c"), request("a", 0, topics=["wide"], owned={},
                                                                         rebalance_timeout=1000))
    assert answer.error_code == Errors.UNSUPPORTED_VERSION


async def _settle(context):
    while context.groups.consumer._tasks:
        await asyncio.wait(list(context.groups.consumer._tasks))


async def test_a_classic_join_takes_an_empty_consumer_group(context, tmp_path):
    from tests.group.test_coordinator import RANGE
    a = Member(context, "a", topics=("wide",))
    await a.join()
    await a.leave()
    # empty: the id goes to the classic member, and the consumer group's records are tombstoned
    joined = asyncio.ensure_future(context.groups.join_group(G, "", None, "consumer", RANGE, 10_000, 30_000,
                                                             "client", "/h", require_known_member_id=False))
    await asyncio.sleep(0)
    assert G not in context.groups.consumer.groups
    context.clock.advance(3_000)  # group.initial.rebalance.delay.ms
    assert (await joined).error == Errors.NONE
    await context.close()
    again = make_context(tmp_path, ManualClock())
    assert G not in again.groups.consumer.groups  # the tombstones replayed
    await again.close()


async def test_offset_delete_and_delete_group_of_a_consumer_protocol_group(context):
    from weir.broker.group import admin
    from weir.broker.group.offsets import OffsetEntry
    a = Member(context, "a", topics=("wide",))
    await a.join()
    await context.offsets.commit(G, {("wide", 0): OffsetEntry(5, -1, "", 1), ("data", 0): OffsetEntry(7, -1, "", 1)})
    errors = await admin.delete_offsets(context.groups, G, [("wide", 0), ("data", 0)])
    assert errors == {("wide", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC, ("data", 0): Errors.NONE}
    assert set(context.offsets.committed[G]) == {("wide", 0)}
    assert await admin.delete_group(context.groups, G) == Errors.NON_EMPTY_GROUP
    await a.leave()
    assert await admin.delete_group(context.groups, G) == Errors.NONE
    assert G not in context.groups.consumer.groups and G not in context.offsets.committed


async def test_a_member_rejoining_with_its_id_keeps_its_epoch_and_partitions(context):
    a, b = Member(context, "a", topics=("wide",)), Member(context, "b", topics=("wide",))
    await a.join()
    await b.join()
    await converge([a, b])
    epoch, held, group_epoch = a.epoch, a.partitions(), group_of(context).group_epoch
    answer = await a.join()  # as after FENCED_MEMBER_EPOCH: epoch 0, owning nothing, same member id
    assert (answer["error_code"], answer["member_epoch"]) == (0, epoch)
    assert a.partitions() == held and group_of(context).group_epoch == group_epoch
