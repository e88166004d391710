"""offsets.retention.minutes on a manual clock: Kafka's expiry rules per kind of group."""

import asyncio

import pytest

from weir.broker.group.classic import GroupState
from weir.broker.group.offsets import OffsetEntry
from tests.group.test_coordinator import G, Members, settle
from tests.txn.test_coordinator import make_context

RETENTION_MS = 60_000  # offsets.retention.minutes=1
SETTINGS = {"group.initial.rebalance.delay.ms": 0, "offsets.retention.minutes": 1,
            "offsets.retention.check.interval.ms": 5_000}


@pytest.fixture
async def ctx(tmp_path):
    context = make_context(tmp_path, **SETTINGS)
    context.groups.start()
    yield context
    await context.close()


def entry(ctx, offset):
    return OffsetEntry(offset, -1, "", ctx.clock.now_ms())


async def simple_commit(ctx, group, offsets):
    """OffsetCommit as a consumer outside any group sends it (generation -1)."""
    ctx.groups.validate_offset_commit(group, "", None, -1, False)
    await ctx.offsets.commit(group, offsets)


def committed(ctx, group=G):
    return {tp: e.offset for tp, e in ctx.offsets.committed.get(group, {}).items()}


async def test_empty_group_offsets_expire_retention_after_it_became_empty(tmp_path):
    ctx = make_context(tmp_path, **SETTINGS)
    ctx.groups.start()
    m = Members(ctx)
    (a,), generation = await m.stable_group()
    await ctx.offsets.commit(G, {("data", 0): entry(ctx, 5)})
    for _ in range(2 * RETENTION_MS // 5_000):  # a live member: its subscribed offsets never expire
        ctx.clock.advance(5_000)
        assert ctx.groups.heartbeat(G, generation, a, None).name == "NONE"
    assert await ctx.offset_expiry.expire() == (0, 0)
    ctx.groups.leave_group(G, [(a, None)])
    await m.tick()
    assert m.state() == GroupState.EMPTY
    await m.tick(RETENTION_MS - 1)
    assert await ctx.offset_expiry.expire() == (0, 0)
    assert committed(ctx) == {("data", 0): 5}
    await m.tick(1)
    assert await ctx.offset_expiry.expire() == (1, 1)
    assert committed(ctx) == {} and G not in ctx.groups.groups
    await ctx.close()
    reopened = make_context(tmp_path, **SETTINGS)
    try:
        assert G not in reopened.groups.groups and G not in reopened.offsets.committed, "tombstones replayed"
    finally:
        await reopened.close()


async def test_simple_group_offsets_expire_each_retention_after_its_commit(ctx):
    await simple_commit(ctx, "simple", {("data", 0): entry(ctx, 1)})
    ctx.clock.advance(30_000)
    await simple_commit(ctx, "simple", {("data", 1): entry(ctx, 2)})
    ctx.clock.advance(30_000)
    assert await ctx.offset_expiry.expire() == (1, 0)
    assert committed(ctx, "simple") == {("data", 1): 2}
    ctx.clock.advance(30_000)
    assert await ctx.offset_expiry.expire() == (1, 1)
    assert "simple" not in ctx.groups.groups


async def test_stable_consumer_group_keeps_subscribed_topics_and_expires_the_others(ctx):
    m = Members(ctx)
    (a,), generation = await m.stable_group()  # subscribed to "data"
    await ctx.offsets.commit(G, {("data", 0): entry(ctx, 1), ("old-topic", 0): entry(ctx, 2)})
    for _ in range(RETENTION_MS // 5_000):
        ctx.clock.advance(5_000)
        assert ctx.groups.heartbeat(G, generation, a, None).name == "NONE"
    assert await ctx.offset_expiry.expire() == (1, 0)
    assert committed(ctx) == {("data", 0): 1}
    assert m.state() == GroupState.STABLE


async def test_pending_transactional_offsets_are_not_expired(ctx):
    from tests.txn.test_offsets import GROUP, TP, txn_commit_offsets
    await simple_commit(ctx, GROUP, {TP: entry(ctx, 5), ("data", 1): entry(ctx, 6)})
    await txn_commit_offsets(ctx, "t1", 42)
    ctx.clock.advance(RETENTION_MS)
    assert await ctx.offset_expiry.expire() == (1, 0), "only the partition without a pending offset"
    assert committed(ctx, GROUP) == {TP: 5}
    assert GROUP in ctx.groups.groups, "a group with pending transactional offsets is not deleted"


async def test_the_check_runs_every_interval(ctx):
    await simple_commit(ctx, "simple", {("data", 0): entry(ctx, 1)})
    ctx.offset_expiry.start()
    await settle()
    ctx.clock.advance(RETENTION_MS)  # the next check after the retention passed
    for _ in range(100):
        if "simple" not in ctx.groups.groups:
            break
        await asyncio.sleep(0)
    assert "simple" not in ctx.groups.groups
