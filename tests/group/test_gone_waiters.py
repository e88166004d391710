"""Parked JoinGroup/SyncGroup answers whose connection closed meanwhile.

A closing connection cancels its task, and with it the future a parked
request awaits. Kafka cannot see such a disconnect (the socket is muted while
the request waits): the member stays, counts as joined, and leaves only when
its session or the pending-sync deadline ends. Every answer to a gone waiter
is dropped, never raised.
"""

import asyncio

from weir.broker.group.classic import GroupState
from weir.protocol.errors import Errors
from tests.group.test_coordinator import G, REBALANCE, SESSION, Members, settle
from tests.txn.test_coordinator import make_context

DELAY = 3000


async def hang_up(task):
    """What a closed connection does to the request it was awaiting."""
    task.cancel()
    await settle()
    assert task.cancelled()


async def test_member_whose_connection_closed_during_the_initial_delay_stays_and_b_gets_its_assignment(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": DELAY})
    context.groups.start()
    m = Members(context)
    try:
        a, a_join = await m.new_member()
        await hang_up(a_join)
        b, b_join = await m.new_member()
        await m.tick(DELAY)  # b arrived during the delay: one more round
        assert not b_join.done()
        await m.tick(DELAY)  # before the fix: InvalidStateError from the timer, and b never answered
        joined = await b_join
        assert (joined.error, joined.generation) == (Errors.NONE, 1)
        # a is kept, as Kafka keeps it; b leads because only b can be told the members
        assert joined.leader == b
        assert [member for member, _instance, _meta in joined.members] == [a, b]
        synced = await m.sync(b, 1, {a: b"A", b: b"B"})
        assert (synced.error, synced.assignment) == (Errors.NONE, b"B")
        assert m.state() == GroupState.STABLE
        # a never heartbeats: its session ends and the group rebalances without it
        await m.tick(SESSION - 1)
        assert m.heartbeat(b, 1) == Errors.NONE
        await m.tick(1)
        assert m.heartbeat(b, 1) == Errors.REBALANCE_IN_PROGRESS
        assert list(m.groups.groups[G].members) == [b]
    finally:
        await context.close()


async def test_gone_join_waiter_in_a_later_rebalance_does_not_break_the_joining_member(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    context.groups.start()
    m = Members(context)
    try:
        (a,), generation = await m.stable_group()
        pending = await m.join()
        assert pending.error == Errors.MEMBER_ID_REQUIRED
        a_join = m.join(a)  # the leader rejoins; the rebalance waits for the pending member
        await settle()
        await hang_up(a_join)
        # the pending member's join completes the rebalance inside its own request
        joined = await m.join(pending.member_id)
        assert (joined.error, joined.generation, joined.leader) == (Errors.NONE, generation + 1,
                                                                    pending.member_id)
        assert {member for member, _instance, _meta in joined.members} == {a, pending.member_id}
    finally:
        await context.close()


async def test_leave_group_completing_a_rebalance_with_a_gone_waiter_is_answered(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    context.groups.start()
    m = Members(context)
    try:
        (a, b), generation = await m.stable_group(2)
        a_join = m.join(a)
        await settle()
        await hang_up(a_join)
        # b leaving leaves only a, whose join is parked: the rebalance completes inside LeaveGroup
        assert m.groups.leave_group(G, [(b, None)]) == [Errors.NONE]
        group = m.groups.groups[G]
        assert (group.state, group.generation, list(group.members)) == (
            GroupState.COMPLETING_REBALANCE, generation + 1, [a])
        # a never syncs: dropped at the rebalance timeout, and the group empties
        await m.tick(REBALANCE)
        assert list(group.members) == []
        assert m.groups.leave_group(G, [(a, None)]) == [Errors.UNKNOWN_MEMBER_ID]
    finally:
        await context.close()


async def test_leave_of_the_member_whose_connection_closed_is_answered(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    context.groups.start()
    m = Members(context)
    try:
        (a, b, c), generation = await m.stable_group(3)
        a_join, c_join = m.join(a), m.join(c)
        await settle()
        await hang_up(a_join)
        await hang_up(c_join)
        # a leaves; the rebalance then holds only gone waiters (c) and b, who has not rejoined
        assert m.groups.leave_group(G, [(a, None)]) == [Errors.NONE]
        assert m.groups.leave_group(G, [(b, None)]) == [Errors.NONE]  # completes with c alone
        group = m.groups.groups[G]
        assert (group.generation, group.leader_id, list(group.members)) == (generation + 1, c, [c])
    finally:
        await context.close()


async def test_gone_sync_waiters_are_skipped_when_the_assignment_is_stored(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    context.groups.start()
    m = Members(context)
    try:
        a, a_join = await m.new_member()
        b, b_join = await m.new_member()
        await m.tick()
        generation = (await a_join).generation
        assert (await b_join).leader == a
        follower = m.sync(b, generation)
        await settle()
        await hang_up(follower)
        leader = await m.sync(a, generation, {a: b"A", b: b"B"})
        assert (leader.error, leader.assignment) == (Errors.NONE, b"A")
        assert m.state() == GroupState.STABLE
        # b's answer was dropped, not its membership: it heartbeats and reads its assignment again
        assert m.heartbeat(b, generation) == Errors.NONE
        assert (await m.sync(b, generation)).assignment == b"B"
    finally:
        await context.close()


async def test_static_member_replaced_while_its_connection_closes_is_stored(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    context.groups.start()
    m = Members(context)
    try:
        first = m.join(instance="i-0")
        await m.tick()
        old = await first
        assert (await m.sync(old.member_id, old.generation, {old.member_id: b"A"}, instance="i-0")).error \
            == Errors.NONE
        spawned = []
        spawn = m.groups._spawn
        m.groups._spawn = lambda coroutine: spawned.append(asyncio.ensure_future(coroutine))
        restarted = m.join(instance="i-0")  # answered once the replacement is stored
        await asyncio.sleep(0)
        assert not restarted.done() and len(spawned) == 1
        await hang_up(restarted)
        await asyncio.wait(spawned)
        m.groups._spawn = spawn
        assert spawned[0].exception() is None  # before the fix: InvalidStateError
        group = m.groups.groups[G]
        new_id = group.static_member_id("i-0")
        assert new_id != old.member_id and m.heartbeat(new_id, old.generation, "i-0") == Errors.NONE
    finally:
        await context.close()
