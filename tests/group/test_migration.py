"""Classic and consumer-protocol members in one group (KIP-848's online migration), against a real
log store on a manual clock: a classic member served by a consumer group, the upgrade of a classic
group on the first ConsumerGroupHeartbeat, the downgrade when the last consumer-protocol member
leaves, the migration policy, and replay."""

import asyncio
from types import SimpleNamespace

import pytest

from weir.broker import handlers  # noqa: F401  (registers the handlers)
from weir.broker.dispatcher import HANDLERS
from weir.protocol.api_keys import ApiKey

from weir.broker.clock import ManualClock
from weir.broker.group.classic import GroupState
from weir.protocol.consumer_protocol import MemberSubscription, decode_assignment, encode_subscription
from weir.protocol.errors import Errors
from tests.group.consumer_driver import G, Member
from tests.txn.test_coordinator import make_context


@pytest.fixture
def context(tmp_path):
    ctx = make_context(tmp_path, ManualClock(), **{"group.initial.rebalance.delay.ms": 0})
    ctx.logs.create_topic("wide", 6)
    yield ctx


def protocols(owned=None):
    return [("range", encode_subscription(MemberSubscription(["wide"], owned=owned or {})))]


class ClassicMember:
    """A cooperative classic consumer: JoinGroup with what it owns, SyncGroup, Heartbeat."""

    def __init__(self, context, member_id="", instance=None):
        self.groups, self.member_id, self.generation, self.owned = context.groups, member_id, -1, set()
        self.instance = instance

    async def join(self):
        result = await self.groups.join_group(G, self.member_id, self.instance, "consumer",
                                              protocols({"wide": sorted(self.owned)}), 45_000, 30_000, "classic",
                                              "/h", require_known_member_id=False)
        assert result.error == Errors.NONE, result
        self.member_id, self.generation = result.member_id, result.generation
        return result

    async def sync(self):
        result = await self.groups.sync_group(G, self.generation, self.member_id, self.instance, {})
        assert result.error == Errors.NONE, result
        self.owned = set(decode_assignment(result.assignment).get("wide", []))
        return result

    def heartbeat(self):
        return self.groups.heartbeat(G, self.generation, self.member_id, self.instance)

    async def rebalance(self):
        await self.join()
        await self.sync()


async def settle(context):
    while context.groups.consumer._tasks or context.groups._tasks:
        await asyncio.wait(list(context.groups.consumer._tasks | context.groups._tasks))


def wide(context, member):
    topic_id = context.logs.topics["wide"].topic_id
    return {p for t, p in member.partitions() if t == topic_id}


async def test_a_classic_member_is_served_by_a_consumer_group(context):
    a, b = Member(context, "a", topics=("wide",)), ClassicMember(context)
    await a.join()
    joined = await b.join()
    assert (joined.protocol_name, joined.leader, joined.members) == ("range", "", [])
    group = context.groups.consumer.groups[G]
    served = group.members[b.member_id]
    assert served.uses_classic_protocol and joined.generation == served.member_epoch
    await b.sync()
    assert b.owned == set()  # a still owns them
    described = HANDLERS[ApiKey.CONSUMER_GROUP_DESCRIBE].fn(
        context, SimpleNamespace(api_version=1, client_id="c"),
        SimpleNamespace(group_ids=[G], include_authorized_operations=False))
    assert {m.member_id: m.member_type for m in described.groups[0].members} == {"a": 1, b.member_id: 0}
    await a.beat()  # a revokes 3
    await a.beat()
    assert b.heartbeat() == Errors.REBALANCE_IN_PROGRESS  # what it waited for is free: rejoin
    await b.rebalance()
    assert b.heartbeat() == Errors.NONE
    assert len(b.owned) == 3 and not b.owned & wide(context, a) and b.owned | wide(context, a) == set(range(6))
    # its commits carry its generation (= member epoch); another is ILLEGAL_GENERATION, as in Kafka
    context.groups.validate_offset_commit(G, b.member_id, None, b.generation, False, 8)
    for generation in (b.generation + 1, b.generation - 1):  # newer; older than b holds its partitions
        with pytest.raises(Exception) as refused:
            context.groups.validate_offset_commit(G, b.member_id, None, generation, False, 8,
                                                  partitions=[("wide", p) for p in sorted(b.owned)])
        assert refused.value.error == Errors.ILLEGAL_GENERATION
    # a classic member with no protocol in common with the classic members is refused, as in Kafka
    stranger = await context.groups.join_group(G, "", None, "consumer", [("roundrobin", protocols()[0][1])], 45_000,
                                               30_000, "classic", "/h", require_known_member_id=False)
    assert stranger.error == Errors.INCONSISTENT_GROUP_PROTOCOL
    # leaving by LeaveGroup frees its partitions for a
    assert context.groups.leave_group(G, [(b.member_id, None)]) == [Errors.NONE]
    await settle(context)
    for _ in range(3):
        await a.beat()
    assert wide(context, a) == set(range(6))


async def test_a_restarted_static_classic_member_takes_its_place_back(context):
    a, b = Member(context, "a", topics=("wide",)), ClassicMember(context, instance="i1")
    await a.join()
    await b.join()
    for _ in range(3):
        await a.beat()
        if b.heartbeat() == Errors.REBALANCE_IN_PROGRESS:
            await b.rebalance()
    held = context.groups.consumer.groups[G].members[b.member_id].assigned
    assert held
    # the process restarts: same instance id, no member id, no leave first (a classic consumer does not send one)
    restarted = ClassicMember(context, instance="i1")
    await restarted.join()
    group = context.groups.consumer.groups[G]
    assert b.member_id not in group.members and group.members[restarted.member_id].assigned == held
    assert b.heartbeat() == Errors.FENCED_INSTANCE_ID


async def test_a_classic_member_must_sync_and_rejoin_within_its_rebalance_timeout(context):
    """Kafka's join and sync timeouts for classic members of a consumer group: the rebalance timeout
    (30 s here) bounds JoinGroup -> SyncGroup and REBALANCE_IN_PROGRESS -> JoinGroup, while the
    session (45 s) is kept alive by heartbeats."""
    a = Member(context, "a", topics=("wide",))
    await a.join()
    group = context.groups.consumer.groups[G]
    clock = context.groups.clock

    async def wait(ms, classic=()):  # time passes; everyone else heartbeats meanwhile
        for _ in range(ms // 5_000):
            clock.advance(5_000)
            await a.beat()
            for member in classic:
                member.heartbeat()
        await settle(context)

    slow_sync = ClassicMember(context)
    await slow_sync.join()
    await wait(25_000)
    assert slow_sync.member_id in group.members
    await wait(5_000)
    assert slow_sync.member_id not in group.members  # joined, never synced: fenced after 30 s

    b = ClassicMember(context)
    await b.rebalance()
    for _ in range(4):  # b converges: it rejoins each time it is told to
        await a.beat()
        if b.heartbeat() == Errors.REBALANCE_IN_PROGRESS:
            await b.rebalance()
    assert b.heartbeat() == Errors.NONE and len(b.owned) == 3
    await wait(35_000, [b])  # synced in time: no deadline left but the session, which heartbeats renew
    assert b.member_id in group.members
    await Member(context, "c", topics=("wide",)).join()  # a new epoch: b is told to rejoin
    assert b.heartbeat() == Errors.REBALANCE_IN_PROGRESS
    await wait(25_000, [b])  # it heartbeats (its session stays alive) but does not rejoin
    assert b.member_id in group.members and b.heartbeat() == Errors.REBALANCE_IN_PROGRESS
    await wait(5_000, [b])
    assert b.member_id not in group.members  # 30 s after the first REBALANCE_IN_PROGRESS


async def test_a_classic_member_rejoins_for_a_new_target_not_for_a_new_group_epoch(context):
    """As Kafka: a member leaving bumps the group epoch, but a classic member is asked to rejoin only once
    a heartbeat has computed the new target assignment (its epoch is the one compared)."""
    a, b = Member(context, "a", topics=("wide",)), ClassicMember(context)
    await a.join()
    await b.rebalance()
    for _ in range(4):
        await a.beat()
        if b.heartbeat() == Errors.REBALANCE_IN_PROGRESS:
            await b.rebalance()
    c = Member(context, "c", topics=("wide",))
    await c.join()
    for _ in range(4):
        for member in (a, c):
            await member.beat()
        if b.heartbeat() == Errors.REBALANCE_IN_PROGRESS:
            await b.rebalance()
    group = context.groups.consumer.groups[G]
    assert b.heartbeat() == Errors.NONE and group.state.value == "Stable"
    await c.leave()
    assert group.group_epoch > group.target_epoch
    assert b.heartbeat() == Errors.NONE  # no new target yet
    await a.beat()  # computes it: c's partitions go to a and b
    assert group.group_epoch == group.target_epoch
    assert b.heartbeat() == Errors.REBALANCE_IN_PROGRESS


async def test_upgrade_then_downgrade(context):
    b, c = ClassicMember(context), ClassicMember(context)
    joins = asyncio.ensure_future(asyncio.gather(b.join(), c.join()))
    await asyncio.sleep(0)
    context.clock.advance(1)  # the initial rebalance delay (0) runs on the manual clock
    await joins
    await asyncio.gather(b.sync(), c.sync())
    assert b.owned | c.owned == set()  # no leader assigned: only the coordinator's bookkeeping matters here
    generation = context.groups.groups[G].generation
    # the first ConsumerGroupHeartbeat upgrades the classic group; its members keep their epoch
    a = Member(context, "a", topics=("wide",))
    assert (await a.join())["error_code"] == 0
    assert G not in context.groups.groups
    group = context.groups.consumer.groups[G]
    assert {m.member_id: m.uses_classic_protocol for m in group.members.values()} == {
        b.member_id: True, c.member_id: True, "a": False}
    assert group.members[b.member_id].member_epoch == generation < group.group_epoch
    assert b.heartbeat() == Errors.REBALANCE_IN_PROGRESS
    await b.rebalance()
    await c.rebalance()
    for _ in range(3):
        await a.beat()
        for member in (b, c):
            if member.heartbeat() == Errors.REBALANCE_IN_PROGRESS:
                await member.rebalance()
    owned = [wide(context, a), b.owned, c.owned]
    assert sorted(p for parts in owned for p in parts) == list(range(6)) and all(len(p) == 2 for p in owned)
    # the last consumer-protocol member leaves: the classic members form a classic group, which rebalances
    await a.leave()
    await settle(context)
    assert G not in context.groups.consumer.groups
    classic = context.groups.groups[G]
    assert classic.state == GroupState.PREPARING_REBALANCE and set(classic.members) == {b.member_id, c.member_id}
    assert classic.generation == b.generation == c.generation  # their generation still holds: told to rejoin
    assert b.heartbeat() == Errors.REBALANCE_IN_PROGRESS


async def test_classic_members_of_a_consumer_group_are_replayed(context, tmp_path):
    a, b = Member(context, "a", topics=("wide",)), ClassicMember(context)
    await a.join()
    await b.join()
    await settle(context)
    before = context.groups.consumer.groups[G].members[b.member_id]
    await context.close()
    again = make_context(tmp_path, ManualClock())
    after = again.groups.consumer.groups[G].members[b.member_id]
    assert (after.classic_protocols, after.classic_session_timeout_ms, after.member_epoch) == (
        before.classic_protocols, 45_000, before.member_epoch)
    await again.close()


async def test_a_disabled_policy_keeps_a_classic_group_classic(tmp_path):
    context = make_context(tmp_path, ManualClock(), **{"group.initial.rebalance.delay.ms": 0,
                                                       "group.consumer.migration.policy": "DISABLED"})
    context.logs.create_topic("wide", 6)
    b = ClassicMember(context)
    joined = asyncio.ensure_future(b.join())
    await asyncio.sleep(0)
    context.clock.advance(1)
    await joined
    answer = await Member(context, "a", topics=("wide",)).join()
    assert answer["error_code"] == Errors.GROUP_ID_NOT_FOUND and G in context.groups.groups
    await context.close()
