"""Members whose connection closes while their JoinGroup is parked, over the wire.

The broker keeps such a member (Kafka cannot see the disconnect either) and
must still answer everyone else: the other joiners after the initial delay,
and a LeaveGroup that completes the rebalance.
"""

import asyncio
import time

import pytest

from weir.client import Connection
from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_groups, join_group, leave_group, sync_group
from tests.broker_process import BrokerProcess

GROUP = "disconnect-group"
PROTOCOLS = [join_group.Protocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00")]
INITIAL_DELAY_MS = 3000
BROKEN = ("InvalidStateError", "Exception in callback", "unexpected error handling")


def start_broker(tmp_path, initial_delay_ms):
    return BrokerProcess(tmp_path / "data", overrides={
        "group.initial.rebalance.delay.ms": str(initial_delay_ms)}).start()


@pytest.fixture
def delayed_broker(tmp_path):
    process = start_broker(tmp_path, INITIAL_DELAY_MS)
    yield process
    process.stop()


@pytest.fixture
def prompt_broker(tmp_path):
    process = start_broker(tmp_path, 0)
    yield process
    process.stop()


def opener(process, opened):
    async def open_one():
        connection = await Connection.open("127.0.0.1", process.port)
        opened.append(connection)
        return connection
    return open_one


@pytest.fixture
async def connections():
    opened = []
    yield opened
    for connection in opened:
        await connection.close()


async def join(conn, member_id="", session=10000):
    return await conn.request(ApiKey.JOIN_GROUP, 5, join_group.REQUEST(
        group_id=GROUP, session_timeout_ms=session, rebalance_timeout_ms=10000, member_id=member_id,
        protocol_type="consumer", protocols=PROTOCOLS))


async def sync(conn, member_id, generation, assignments=()):
    return await conn.request(ApiKey.SYNC_GROUP, 3, sync_group.REQUEST(
        group_id=GROUP, generation_id=generation, member_id=member_id,
        assignments=[sync_group.Assignment(member_id=m, assignment=a) for m, a in assignments]))


async def describe(conn):
    answer = await conn.request(ApiKey.DESCRIBE_GROUPS, 5, describe_groups.REQUEST(groups=[GROUP]))
    return answer.groups[0]


async def wait_for_state(conn, state, member_ids, timeout=10.0):
    """Poll DescribeGroups until the group is in ``state`` with exactly these members."""
    deadline = time.monotonic() + timeout
    while True:
        group = await describe(conn)
        if group.group_state == state and sorted(m.member_id for m in group.members) == sorted(member_ids):
            return group
        assert time.monotonic() < deadline, f"group stayed {group.group_state} with {group.members}"
        await asyncio.sleep(0.02)


async def park_join_and_hang_up(conn, member_id, observer, state, members):
    """Send a JoinGroup that the broker parks, then close its connection.

    The observer's DescribeGroups round trip afterwards is the barrier: the close
    (FIN) reached the broker before that request did, so the parked request's
    connection is gone by the time anything else is sent.
    """
    parked = asyncio.ensure_future(join(conn, member_id))
    await wait_for_state(observer, state, members)
    assert not parked.done()
    await conn.close()
    with pytest.raises(ConnectionError):
        await parked
    await describe(observer)


async def test_member_gone_during_the_initial_delay_does_not_stall_the_next_member(delayed_broker, connections):
    open_one = opener(delayed_broker, connections)
    observer, conn_a, conn_b = await open_one(), await open_one(), await open_one()
    a = (await join(conn_a)).member_id
    await park_join_and_hang_up(conn_a, a, observer, "PreparingRebalance", [a])
    b = (await join(conn_b)).member_id
    started = time.monotonic()
    joined = await join(conn_b, b)  # before the fix: UNKNOWN_MEMBER_ID after the rebalance timeout
    waited = time.monotonic() - started
    assert (joined.error_code, joined.generation_id, joined.leader) == (Errors.NONE, 1, b)
    assert sorted(m.member_id for m in joined.members) == sorted([a, b])  # a is kept, as Kafka keeps it
    assert waited >= INITIAL_DELAY_MS / 1000 * 0.9
    synced = await sync(conn_b, b, 1, [(a, b"for-a"), (b, b"for-b")])
    assert (synced.error_code, synced.assignment) == (Errors.NONE, b"for-b")
    assert (await describe(observer)).group_state == "Stable"
    assert not [line for line in delayed_broker.lines if any(text in line for text in BROKEN)]


async def stable_leader_parked_behind_a_pending_member(broker, connections):
    """A leads generation 1; b has its member id but has not joined; a rejoins and hangs up."""
    open_one = opener(broker, connections)
    observer, conn_a, conn_b = await open_one(), await open_one(), await open_one()
    a = (await join(conn_a)).member_id
    first = await join(conn_a, a)
    assert (first.error_code, first.leader) == (Errors.NONE, a)
    assert (await sync(conn_a, a, 1, [(a, b"A")])).error_code == Errors.NONE
    pending = await join(conn_b)
    assert pending.error_code == Errors.MEMBER_ID_REQUIRED
    # the rebalance a's rejoin starts waits for the pending member too
    await park_join_and_hang_up(conn_a, a, observer, "PreparingRebalance", [a])
    return observer, conn_b, a, pending.member_id


async def test_leave_group_of_another_member_is_answered(prompt_broker, connections):
    observer, conn_b, a, b = await stable_leader_parked_behind_a_pending_member(prompt_broker, connections)
    # b's leaving completes the rebalance a waits in; a's answer has nowhere to go
    left = await conn_b.request(ApiKey.LEAVE_GROUP, 1, leave_group.REQUEST(group_id=GROUP, member_id=b))
    assert left.error_code == Errors.NONE
    await wait_for_state(observer, "CompletingRebalance", [a])
    assert not [line for line in prompt_broker.lines if any(text in line for text in BROKEN)]


async def test_leave_group_of_the_gone_member_and_another_is_answered(prompt_broker, connections):
    observer, conn_b, a, b = await stable_leader_parked_behind_a_pending_member(prompt_broker, connections)
    left = await conn_b.request(ApiKey.LEAVE_GROUP, 3, leave_group.REQUEST(group_id=GROUP, members=[
        leave_group.MemberIdentity(member_id=b), leave_group.MemberIdentity(member_id=a)]))
    assert left.error_code == Errors.NONE
    assert [(m.member_id, m.error_code) for m in left.members] == [(b, Errors.NONE), (a, Errors.NONE)]
    await wait_for_state(observer, "Empty", [])
    assert not [line for line in prompt_broker.lines if any(text in line for text in BROKEN)]
