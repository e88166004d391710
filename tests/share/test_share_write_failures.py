"""A share-partition's state write that fails undoes the change it was for, as Kafka 4.4's
SharePartition rolls back when its persister write fails: an acknowledgement answers
COORDINATOR_NOT_AVAILABLE and its records stay with the member, which may acknowledge them again,
until their lock expires; then they are delivered again, counted. A leaving member's release is
undone alike; a lock expiry stands. The writes fail through the full-disk path of the log layer
(``disk.fill``), on a real log with a manual clock."""

from types import SimpleNamespace

import pytest

from weir.broker.clock import ManualClock
from weir.broker.log import disk
from weir.broker.share import requests as share
from weir.broker.share.in_flight import Limits
from weir.broker.share.record_state import RecordState
from weir.protocol.errors import Errors
from tests.share.test_share_partition import ACCEPT, RELEASE, RENEW, append, share_partition, state
from tests.txn.test_coordinator import make_context

G, MEMBER, OTHER = "jobs", "member-a", "member-b"
LOCK_MS = 30_000
LIMITS = Limits(lock_ms=LOCK_MS, delivery_limit=5, max_in_flight=100)
S = RecordState


@pytest.fixture
def context(tmp_path):
    ctx = make_context(tmp_path, ManualClock(), **{"group.share.record.lock.duration.ms": LOCK_MS})
    yield ctx
    disk.fill(ctx.data_dir, False)


@pytest.fixture
def held(context):
    """The share-partition of ``data``-0 with offsets 0-3 produced and 0-2 acquired by MEMBER."""
    async def make():
        manager = context.share_partitions
        sp = manager.get(G, context.logs.topics["data"].topic_id, 0)  # at the end of an empty log
        await append(context, 4)
        assert sp.acquire(MEMBER, 3, manager.limits(G), strict=True).ranges == [(0, 2, 1)]
        return sp
    return make


def topics(context, *batches):
    return [SimpleNamespace(topic_id=context.logs.topics["data"].topic_id, partitions=[SimpleNamespace(
        partition_index=0, acknowledgement_batches=[
            SimpleNamespace(first_offset=first, last_offset=last, acknowledge_types=[kind])
            for first, last, kind in batches])])]


async def acknowledge(context, member, *batches):
    results = await share.acknowledge(context.share_partitions, G, member, topics(context, *batches), False)
    error = next(iter(results.values()))
    return (error.code, error.message) if error else (Errors.NONE, None)


def replayed(context, sp):
    """The share-partition's state as a restart would read it from ``__share_group_state``."""
    manager = type(context.share_partitions)(context)
    manager.load()
    stored = manager.stored[sp.key]
    return stored.start_offset, stored.batches


async def test_a_failed_write_undoes_the_acknowledgement_and_the_retry_succeeds(context, held):
    sp = await held()
    disk.fill(context.data_dir, True)
    code, message = await acknowledge(context, MEMBER, (0, 2, ACCEPT))
    assert (code, message) == (Errors.COORDINATOR_NOT_AVAILABLE, "Error in write state RPC. Exhausted max retries "
                                                                "to complete write state RPC without success.")
    assert (state(sp), sp.start_offset) == ({o: (S.ACQUIRED, 1) for o in range(3)}, 0)
    assert all(sp.in_flight[o].lock.member_id == MEMBER for o in range(3))
    assert sp.acquire(OTHER, 10, LIMITS, strict=True).ranges == [(3, 3, 1)]  # 0-2 are still the member's
    disk.fill(context.data_dir, False)
    assert await acknowledge(context, MEMBER, (0, 2, ACCEPT)) == (Errors.NONE, None)
    assert (sp.start_offset, list(sp.in_flight)) == (3, [3])
    assert replayed(context, sp) == (3, [(3, 3, S.AVAILABLE, 1)])
    context.clock.advance(LOCK_MS)  # a's lock runs out: nothing it accepted comes back
    assert state(sp) == {3: (S.AVAILABLE, 1)}


async def test_unacknowledged_records_come_back_counted_when_their_lock_expires(context, held):
    sp = await held()
    disk.fill(context.data_dir, True)
    assert (await acknowledge(context, MEMBER, (0, 1, ACCEPT), (2, 2, RELEASE)))[0] == Errors.COORDINATOR_NOT_AVAILABLE
    disk.fill(context.data_dir, False)
    context.clock.advance(LOCK_MS)
    assert state(sp) == {0: (S.AVAILABLE, 1), 1: (S.AVAILABLE, 1), 2: (S.AVAILABLE, 1)}
    assert sp.acquire(OTHER, 10, LIMITS, strict=True).ranges == [(0, 2, 2), (3, 3, 1)]
    assert (await acknowledge(context, MEMBER, (0, 2, ACCEPT)))[0] == Errors.INVALID_RECORD_STATE  # not its now
    assert await acknowledge(context, OTHER, (0, 3, ACCEPT)) == (Errors.NONE, None)
    assert (sp.start_offset, sp.in_flight, replayed(context, sp)) == (4, {}, (4, []))


async def test_a_lock_expiring_while_the_write_is_pending_releases_on_rollback(context):
    partition = await append(context, 2)
    sp, woken = share_partition(context, partition)
    sp.acquire(MEMBER, 10, LIMITS, strict=True)
    change = sp.acknowledge(MEMBER, [(0, 0, [RELEASE]), (1, 1, [RENEW])], LIMITS)
    assert sp.acquire(OTHER, 10, LIMITS, strict=True).ranges == []  # a pending release is not acquired
    context.clock.advance(LOCK_MS)  # the first lock runs out meanwhile: pending records are left alone
    assert state(sp) == {0: (S.AVAILABLE, 1), 1: (S.ACQUIRED, 1)}
    sp.rollback(change)  # both were under the lock that ran out: released now
    assert state(sp) == {0: (S.AVAILABLE, 1), 1: (S.AVAILABLE, 1)} and woken == [1]
    assert sp.acquire(OTHER, 10, LIMITS, strict=True).ranges == [(0, 1, 2)]


async def test_a_leaving_members_release_is_undone_and_its_lock_expiry_stands(context, held):
    sp = await held()
    disk.fill(context.data_dir, True)
    context.share_partitions.member_left(G, MEMBER)
    await context.share_partitions.close()  # the release's write, failed
    assert state(sp) == {o: (S.ACQUIRED, 1) for o in range(3)}  # still the member's, as in Kafka
    context.clock.advance(LOCK_MS)  # the expiry stands although its write fails too
    assert state(sp) == {o: (S.AVAILABLE, 1) for o in range(3)}
    await context.share_partitions.close()
    disk.fill(context.data_dir, False)
    assert sp.acquire(OTHER, 10, LIMITS, strict=True).ranges == [(0, 2, 2), (3, 3, 1)]
