"""The classic group protocol against a real log store, on a manual clock."""

import asyncio
import struct

import pytest

from weir.broker.group.classic import GroupState
from weir.protocol.errors import Errors, KafkaError
from tests.txn.test_coordinator import make_context

G = "group-a"
SESSION, REBALANCE = 10_000, 30_000


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


RANGE = [("range", subscription("data"))]


class Members:
    """Drives the coordinator the way a consumer does; parked answers are tasks."""

    def __init__(self, context):
        self.context = context
        self.groups = context.groups
        self.clock = context.clock

    def join(self, member_id="", *, instance=None, protocols=RANGE, protocol_type="consumer", version=5,
             session=SESSION, rebalance=REBALANCE, group=G):
        return asyncio.ensure_future(self.groups.join_group(
            group, member_id, instance, protocol_type, protocols, session, rebalance, "client", "/127.0.0.1",
            require_known_member_id=version >= 4))

    async def new_member(self, **kwargs):
        """Join v4+: MEMBER_ID_REQUIRED first, then the real join (still parked)."""
        first = await self.join(**kwargs)
        assert first.error == Errors.MEMBER_ID_REQUIRED and first.member_id.startswith("client-")
        task = self.join(first.member_id, **kwargs)
        await settle()
        return first.member_id, task

    def sync(self, member_id, generation, assignments=None, *, instance=None, group=G):
        return asyncio.ensure_future(self.groups.sync_group(group, generation, member_id, instance,
                                                            assignments or {}))

    async def tick(self, ms=0):
        await settle()  # requests already sent reach the coordinator (and set their timers) first
        self.clock.advance(ms)
        await settle()

    async def stable_group(self, count=1):
        """``count`` members in a Stable generation; returns their ids (leader first) and the generation."""
        tasks = []
        for _ in range(count):
            _member_id, task = await self.new_member()
            tasks.append(task)
        await self.tick()
        results = [await task for task in tasks]
        generation = results[0].generation
        leader = results[0].leader
        ids = [leader] + [r.member_id for r in results if r.member_id != leader]
        syncs = [self.sync(member, generation, {i: i.encode() for i in ids} if member == leader else None)
                 for member in ids]
        await settle()
        assert [(await s).error for s in syncs] == [Errors.NONE] * count
        assert self.state() == GroupState.STABLE
        return ids, generation

    def heartbeat(self, member_id, generation, instance=None):
        return self.groups.heartbeat(G, generation, member_id, instance)

    def state(self, group=G):
        return self.groups.groups[group].state


async def settle():
    for _ in range(20):
        await asyncio.sleep(0)


@pytest.fixture
async def ctx(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    context.groups.start()
    yield context
    await context.close()


@pytest.fixture
def m(ctx):
    return Members(ctx)


async def test_first_member_gets_an_id_then_leads_generation_one(m):
    member_id, task = await m.new_member()
    assert not task.done()  # the initial rebalance delay (0 ms) has not fired yet
    await m.tick()
    joined = await task
    assert (joined.error, joined.generation, joined.protocol_name, joined.leader) == (
        Errors.NONE, 1, "range", member_id)
    assert joined.members == [(member_id, None, RANGE[0][1])]
    assert m.state() == GroupState.COMPLETING_REBALANCE
    synced = await m.sync(member_id, 1, {member_id: b"assignment"})
    assert (synced.error, synced.assignment) == (Errors.NONE, b"assignment")
    assert m.state() == GroupState.STABLE
    assert m.heartbeat(member_id, 1) == Errors.NONE


async def test_join_below_v4_gets_a_member_id_at_once(m):
    task = m.join(version=3)
    await m.tick()
    joined = await task
    assert joined.error == Errors.NONE and joined.member_id.startswith("client-")


async def test_initial_delay_waits_for_more_members_and_extends(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 3000})
    m = Members(context)
    try:
        _a, first = await m.new_member()
        await m.tick(2000)
        _b, second = await m.new_member()  # arrives during the delay: another delay round follows
        await m.tick(1000)
        assert not first.done()
        await m.tick(2999)
        assert not first.done()
        await m.tick(1)
        assert (await first).generation == (await second).generation == 1
        assert len(m.groups.groups[G].members) == 2
    finally:
        await context.close()


async def test_a_new_member_rebalances_a_stable_group(m):
    (a,), generation = await m.stable_group()
    b, b_join = await m.new_member()
    assert m.state() == GroupState.PREPARING_REBALANCE
    assert m.heartbeat(a, generation) == Errors.REBALANCE_IN_PROGRESS
    assert not b_join.done()
    a_join = m.join(a)
    await settle()
    a_result, b_result = await a_join, await b_join
    assert a_result.generation == b_result.generation == generation + 1
    assert a_result.leader == a and len(a_result.members) == 2 and b_result.members == []
    follower = m.sync(b, generation + 1)
    await settle()
    assert not follower.done()  # parked until the leader's assignment is stored
    leader = await m.sync(a, generation + 1, {a: b"A", b: b"B"})
    assert leader.assignment == b"A" and (await follower).assignment == b"B"


async def test_rebalance_timeout_removes_members_that_do_not_rejoin(m):
    (a, b), generation = await m.stable_group(2)
    c, c_join = await m.new_member()
    a_join = m.join(a)
    for _ in range(REBALANCE // 5000 - 1):
        await m.tick(5000)
        assert m.heartbeat(b, generation) == Errors.REBALANCE_IN_PROGRESS  # b stays alive but never rejoins
    await m.tick(4999)
    assert not a_join.done()
    await m.tick(1)
    result = await a_join
    assert result.generation == generation + 1
    assert {member for member, _instance, _meta in result.members} == {a, c}
    assert m.heartbeat(b, generation + 1) == Errors.UNKNOWN_MEMBER_ID
    assert (await c_join).error == Errors.NONE


async def test_session_expiry_removes_a_silent_member(m):
    (a, b), generation = await m.stable_group(2)
    await m.tick(SESSION - 1)
    assert m.heartbeat(a, generation) == Errors.NONE
    await m.tick(1)
    # b never heartbeat: it was removed after SESSION ms and a rebalance began
    assert m.heartbeat(a, generation) == Errors.REBALANCE_IN_PROGRESS
    assert m.heartbeat(b, generation) == Errors.UNKNOWN_MEMBER_ID
    rejoined = m.join(a)
    await settle()
    assert (await rejoined).generation == generation + 1
    assert list(m.groups.groups[G].members) == [a]


async def test_leave_group_is_answered_after_the_empty_group_is_written(m, ctx, monkeypatch):
    """Kafka answers LeaveGroup once its records are written; so a crash after the answer cannot
    bring the member back on restart."""
    from types import SimpleNamespace

    from weir.broker.handlers.leave_group import handle
    from weir.protocol.messages import leave_group

    (a,), _generation = await m.stable_group(1)
    log, release, appended = m.groups.log, asyncio.Event(), []
    real_append = log.append

    async def held_append(*args, **kwargs):
        await release.wait()
        appended.append(await real_append(*args, **kwargs))

    monkeypatch.setattr(log, "append", held_append)
    answer = asyncio.ensure_future(handle(ctx, SimpleNamespace(api_version=3), leave_group.REQUEST(
        group_id=G, members=[leave_group.MemberIdentity(member_id=a, group_instance_id=None)])))
    await m.tick()
    assert m.state() == GroupState.EMPTY and not answer.done() and not appended
    release.set()
    assert (await answer).members[0].error_code == Errors.NONE
    assert len(appended) == 1


async def test_leave_rebalances_and_last_leave_empties(m):
    (a, b), generation = await m.stable_group(2)
    assert m.groups.leave_group(G, [(b, None), ("nobody", None)]) == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert m.state() == GroupState.PREPARING_REBALANCE
    rejoined = m.join(a)
    await settle()
    assert (await rejoined).generation == generation + 1
    assert m.groups.leave_group(G, [(a, None)]) == [Errors.NONE]
    await m.tick()
    group = m.groups.groups[G]
    assert (group.state, group.generation, group.leader_id) == (GroupState.EMPTY, generation + 2, None)
    assert m.groups.leave_group("no-such-group", [(a, None)]) == [Errors.UNKNOWN_MEMBER_ID]


async def test_heartbeat_and_sync_errors(m):
    (a,), generation = await m.stable_group()
    assert m.groups.heartbeat("other", generation, a, None) == Errors.UNKNOWN_MEMBER_ID
    assert m.heartbeat("stranger", generation) == Errors.UNKNOWN_MEMBER_ID
    assert m.heartbeat(a, generation - 1) == Errors.ILLEGAL_GENERATION
    assert (await m.sync(a, generation + 1)).error == Errors.ILLEGAL_GENERATION
    assert (await m.sync(a, generation)).assignment == a.encode()  # Stable: the stored assignment
    _b, _task = await m.new_member()
    assert (await m.sync(a, generation)).error == Errors.REBALANCE_IN_PROGRESS


async def test_join_errors(m):
    assert (await m.join(session=10)).error == Errors.INVALID_SESSION_TIMEOUT
    assert (await m.join(group="")).error == Errors.INVALID_GROUP_ID
    assert (await m.join("made-up")).error == Errors.UNKNOWN_MEMBER_ID
    (a,), _generation = await m.stable_group()
    assert (await m.join(protocol_type="connect")).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert (await m.join(protocols=[("roundrobin", b"")])).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert (await m.join(protocols=[])).error == Errors.INCONSISTENT_GROUP_PROTOCOL


async def test_protocol_is_chosen_by_member_votes(m):
    both = [("cooperative-sticky", b"c"), ("range", b"r")]
    range_first = [("range", b"r"), ("cooperative-sticky", b"c")]
    tasks = [m.join(version=3, protocols=p) for p in (both, range_first, range_first)]
    await m.tick()
    results = [await t for t in tasks]
    assert {r.protocol_name for r in results} == {"range"}
    leader = next(r for r in results if r.members)
    assert {meta for _id, _instance, meta in leader.members} == {b"r"}


async def test_follower_rejoin_in_stable_keeps_the_generation_but_leader_rejoin_rebalances(m):
    (a, b), generation = await m.stable_group(2)
    same = await m.join(b)
    assert (same.generation, same.members) == (generation, [])
    assert m.state() == GroupState.STABLE
    leader_join = m.join(a)
    await settle()
    assert m.state() == GroupState.PREPARING_REBALANCE and not leader_join.done()


async def test_leader_that_never_syncs_is_dropped_after_the_rebalance_timeout(m):
    a, a_join = await m.new_member()
    b, b_join = await m.new_member()
    await m.tick()
    generation = (await a_join).generation
    await b_join
    follower = m.sync(b, generation)
    await m.tick(REBALANCE)
    assert (await follower).error == Errors.REBALANCE_IN_PROGRESS
    group = m.groups.groups[G]
    assert list(group.members) == [b] and group.state == GroupState.PREPARING_REBALANCE


async def test_pending_member_holds_the_rebalance_until_its_session_timeout(m):
    (a,), generation = await m.stable_group()
    first = await m.join()
    assert first.error == Errors.MEMBER_ID_REQUIRED
    a_join = m.join(a)  # the leader rejoins: a rebalance that waits for the pending member too
    await m.tick(SESSION - 1)
    assert not a_join.done()
    await m.tick(1)
    result = await a_join
    assert result.generation == generation + 1 and [mid for mid, _i, _m in result.members] == [a]
    assert (await m.join(first.member_id)).error == Errors.UNKNOWN_MEMBER_ID  # its id expired with it


async def test_second_join_for_a_member_supersedes_the_parked_one(m):
    (a, b), generation = await m.stable_group(2)
    first = m.join(a)
    await settle()
    second = m.join(a)
    await settle()
    assert (await first).error == Errors.REBALANCE_IN_PROGRESS
    assert not second.done()
    b_join = m.join(b)
    await settle()
    assert (await second).generation == (await b_join).generation == generation + 1


# ---------------------------------------------------------------- static membership


async def test_static_member_restart_keeps_the_generation_and_fences_the_old_id(m):
    joins = [m.join(instance=f"instance-{i}") for i in range(2)]
    await m.tick()
    results = [await j for j in joins]  # static members skip MEMBER_ID_REQUIRED
    generation = results[0].generation
    leader = results[0].leader
    ids = {r.member_id: i for i, r in enumerate(results)}
    await m.sync(leader, generation, {mid: f"part-{i}".encode() for mid, i in ids.items()},
                 instance=f"instance-{ids[leader]}")
    follower = next(mid for mid in ids if mid != leader)
    instance = f"instance-{ids[follower]}"
    restarted = await m.join(instance=instance)
    assert restarted.error == Errors.NONE and restarted.generation == generation
    assert restarted.member_id != follower
    assert m.state() == GroupState.STABLE
    assert m.heartbeat(follower, generation, instance) == Errors.FENCED_INSTANCE_ID
    synced = await m.sync(restarted.member_id, generation, instance=instance)
    assert synced.assignment == f"part-{ids[follower]}".encode()
    assert m.groups.leave_group(G, [(follower, instance)]) == [Errors.FENCED_INSTANCE_ID]
    assert m.groups.leave_group(G, [("", instance)]) == [Errors.NONE]
    assert m.state() == GroupState.PREPARING_REBALANCE


async def test_static_member_that_misses_a_rebalance_stays_until_its_session_ends(m):
    rebalance = SESSION // 2
    joins = [m.join(instance=f"instance-{i}", rebalance=rebalance) for i in range(2)]
    await m.tick()
    results = [await j for j in joins]
    generation = results[0].generation
    await m.sync(results[0].leader, generation, {})
    await m.sync(results[1].member_id if results[1].member_id != results[0].leader else results[0].member_id,
                 generation)
    _newcomer, _newcomer_join = await m.new_member(rebalance=rebalance)
    leader_join = m.join(results[0].leader, rebalance=rebalance, instance=next(
        f"instance-{i}" for i, r in enumerate(results) if r.member_id == results[0].leader))
    await m.tick(rebalance)
    assert (await leader_join).generation == generation + 1
    assert len(m.groups.groups[G].members) == 3  # the silent static member is still a member
    await m.tick(SESSION - rebalance)
    assert len(m.groups.groups[G].members) == 2


# ---------------------------------------------------------------- offset commits


async def test_offset_commit_rules(m):
    validate = m.groups.validate_offset_commit

    def code(*args, transactional=False):
        try:
            validate(*args, transactional=transactional)
        except KafkaError as exc:
            return exc.error
        return Errors.NONE

    assert code("fresh", "", None, 3) == Errors.ILLEGAL_GENERATION
    assert code("simple", "", None, -1) == Errors.NONE and "simple" in m.groups.groups
    (a, b), generation = await m.stable_group(2)
    assert code(G, a, None, generation) == Errors.NONE
    assert code(G, a, None, generation - 1) == Errors.ILLEGAL_GENERATION
    assert code(G, "zombie", None, generation) == Errors.UNKNOWN_MEMBER_ID
    assert code(G, "", None, -1) == Errors.UNKNOWN_MEMBER_ID  # members exist: no anonymous commits
    assert code(G, "", None, -1, transactional=True) == Errors.NONE  # TxnOffsetCommit v0-2 carry no member
    assert code(G, a, None, generation - 1, transactional=True) == Errors.ILLEGAL_GENERATION  # KIP-447
    assert code(G, a, "unknown-instance", generation) == Errors.UNKNOWN_MEMBER_ID
    _c, _task = await m.new_member()
    assert code(G, a, None, generation) == Errors.NONE  # PreparingRebalance: the old generation may commit
    for member in (a, b):
        m.join(member)
    await settle()
    assert code(G, a, None, generation + 1) == Errors.REBALANCE_IN_PROGRESS
    assert code(G, a, None, generation + 1, transactional=True) == Errors.NONE


# ---------------------------------------------------------------- persistence


async def test_group_survives_a_restart_and_its_silent_members_then_expire(tmp_path):
    ctx = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    m = Members(ctx)
    (a, b), generation = await m.stable_group(2)
    await ctx.offsets.commit(G, {("data", 0): _entry(42)})
    await ctx.close()
    reopened = make_context(tmp_path)
    try:
        reopened.groups.start()
        group = reopened.groups.groups[G]
        assert (group.state, group.generation, group.leader_id, group.protocol_name) == (
            GroupState.STABLE, generation, a, "range")
        assert {mid: member.assignment for mid, member in group.members.items()} == {a: a.encode(), b: b.encode()}
        assert reopened.offsets.committed[G][("data", 0)].offset == 42
        again = Members(reopened)
        assert again.heartbeat(a, generation) == Errors.NONE
        await again.tick(SESSION)
        assert again.heartbeat(a, generation) == Errors.UNKNOWN_MEMBER_ID
        assert again.state() == GroupState.EMPTY  # both sessions ended; the rebalance found nobody
    finally:
        await reopened.close()


async def test_empty_generation_is_stored(tmp_path):
    ctx = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    m = Members(ctx)
    (a,), generation = await m.stable_group()
    m.groups.leave_group(G, [(a, None)])
    await m.tick()
    await settle()
    await ctx.close()
    reopened = make_context(tmp_path)
    try:
        group = reopened.groups.groups[G]
        assert (group.state, group.generation, group.members) == (GroupState.EMPTY, generation + 1, {})
    finally:
        await reopened.close()


def _entry(offset):
    from weir.broker.group.offsets import OffsetEntry
    return OffsetEntry(offset, -1, "", 0)
