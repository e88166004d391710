"""DescribeGroups, ListGroups, DeleteGroups and OffsetDelete semantics."""

import pytest

from weir.broker.group import admin
from weir.broker.group.classic import GroupState
from weir.broker.group.offsets import OffsetEntry
from weir.protocol.errors import Errors, KafkaError
from tests.group.test_coordinator import G, RANGE, Members, settle
from tests.txn.test_coordinator import make_context


@pytest.fixture
async def ctx(tmp_path):
    context = make_context(tmp_path, **{"group.initial.rebalance.delay.ms": 0})
    yield context
    await context.close()


async def test_describe_stable_group_and_unknown_group(ctx):
    m = Members(ctx)
    (a, b), _generation = await m.stable_group(2)
    summary = admin.describe(ctx.groups, G)
    assert (summary.state, summary.protocol_type, summary.protocol) == ("Stable", "consumer", "range")
    assert {(s.member_id, s.client_id, s.client_host, s.metadata, s.assignment) for s in summary.members} == {
        (a, "client", "/127.0.0.1", RANGE[0][1], a.encode()), (b, "client", "/127.0.0.1", RANGE[0][1], b.encode())}
    m.join(a)
    await settle()
    rebalancing = admin.describe(ctx.groups, G)
    assert rebalancing.state == "PreparingRebalance" and rebalancing.protocol == ""
    assert all(s.metadata == s.assignment == b"" for s in rebalancing.members)
    missing = admin.describe(ctx.groups, "nope")
    assert (missing.error, missing.state, missing.members) == (Errors.NONE, "Dead", [])


async def test_list_groups_filters_by_state_and_type(ctx):
    m = Members(ctx)
    await m.stable_group()
    ctx.groups.validate_offset_commit("simple", "", None, -1, transactional=False)

    def listed(states=(), types=()):
        return sorted(g.group_id for g in admin.list_groups(ctx.groups, list(states), list(types)))

    assert listed() == [G, "simple"]
    assert listed(["stable"]) == [G]
    assert listed(["Empty"]) == ["simple"]
    assert listed(types=["Classic"]) == [G, "simple"]
    assert listed(types=["consumer"]) == []


async def test_delete_groups(tmp_path, ctx):
    m = Members(ctx)
    (a,), _generation = await m.stable_group()
    await ctx.offsets.commit(G, {("data", 0): OffsetEntry(7, -1, "", 0)})
    assert await admin.delete_group(ctx.groups, G) == Errors.NON_EMPTY_GROUP
    assert await admin.delete_group(ctx.groups, "nope") == Errors.GROUP_ID_NOT_FOUND
    ctx.groups.leave_group(G, [(a, None)])
    await m.tick()
    assert m.state() == GroupState.EMPTY
    assert await admin.delete_group(ctx.groups, G) == Errors.NONE
    assert G not in ctx.groups.groups and G not in ctx.offsets.committed
    await ctx.close()
    reopened = make_context(tmp_path)
    try:
        assert G not in reopened.groups.groups and G not in reopened.offsets.committed
    finally:
        await reopened.close()
    ctx.logs.open()  # the fixture closes it again


async def test_offset_delete_refuses_subscribed_topics(ctx):
    m = Members(ctx)
    await m.stable_group()  # subscribed to "data"
    ctx.logs.create_topic("other", 1)
    await ctx.offsets.commit(G, {("data", 0): OffsetEntry(1, -1, "", 0), ("other", 0): OffsetEntry(2, -1, "", 0)})
    errors = await admin.delete_offsets(ctx.groups, G, [("data", 0), ("other", 0)])
    assert errors == {("data", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): Errors.NONE}
    assert list(ctx.offsets.committed[G]) == [("data", 0)]
    with pytest.raises(KafkaError) as raised:
        await admin.delete_offsets(ctx.groups, "nope", [("data", 0)])
    assert raised.value.error == Errors.GROUP_ID_NOT_FOUND
