"""Streams groups (KIP-1071) on a manual clock: the initial rebalance delay, the assignment interval
and the rebalance timeout of a member slow to revoke, as Kafka 4.4's GroupMetadataManager times them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from weir.broker.clock import ManualClock
from weir.broker.config import BrokerConfig, ConfigError
from weir.broker.group.streams.rebalance import ASSIGNMENT_DELAYED, INITIAL_DELAY, INTERVAL_DELAY
from weir.protocol.errors import Errors
from weir.protocol.messages import streams_group_heartbeat as hb
from tests.txn.test_coordinator import make_context

G = "app"


@pytest.fixture
def context(tmp_path):
    ctx = make_context(tmp_path, ManualClock(), **{"group.streams.initial.rebalance.delay.ms": 3000,
                                                   "group.streams.assignment.interval.ms": 1000})
    ctx.logs.create_topic("in", 4)
    yield ctx


TOPOLOGY = hb.Topology(epoch=1, subtopologies=[hb.Subtopology(
    subtopology_id="0", source_topics=["in"], source_topic_regex=[], state_changelog_topics=[],
    repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


class Member:
    def __init__(self, context, member_id, rebalance_timeout_ms=30000, instance_id=None):
        self.context, self.member_id, self.rebalance_timeout_ms = context, member_id, rebalance_timeout_ms
        self.instance_id = instance_id
        self.epoch, self.active = 0, {}

    async def beat(self, keep=None, epoch=None, shutdown=False):
        """``keep``: the tasks it claims to own instead of those it was given (a member slow to revoke)."""
        joining = self.epoch == 0 and epoch is None
        owned = keep if keep is not None else self.active
        request = SimpleNamespace(
            group_id=G, member_id=self.member_id, member_epoch=self.epoch if epoch is None else epoch,
            endpoint_information_epoch=0, instance_id=self.instance_id, rack_id=None,
            rebalance_timeout_ms=self.rebalance_timeout_ms if joining else -1,
            topology=TOPOLOGY if joining else None, process_id=f"process-{self.member_id}" if joining else None,
            active_tasks=[hb.TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in owned.items()],
            standby_tasks=[], warmup_tasks=[], user_endpoint=None, client_tags=None, task_offsets=None,
            task_end_offsets=None, shutdown_application=shutdown)
        answer = await self.context.groups.streams.heartbeat(request, "client", "/127.0.0.1")
        if answer["error_code"] == Errors.NONE:
            self.epoch = answer["member_epoch"]
            if "tasks" in answer:
                self.active = {s: set(p) for s, p in answer["tasks"][0].items()}
        return answer

    def count(self):
        return sum(map(len, self.active.values()))


def delayed(answer):
    return [detail for code, detail in answer["status"] if code == ASSIGNMENT_DELAYED]


async def test_no_tasks_during_the_initial_delay_then_every_member_gets_its_share(context):
    a, b = Member(context, "a"), Member(context, "b")
    assert delayed(await a.beat()) == [INITIAL_DELAY] and a.epoch == 1 and a.count() == 0  # as Kafka 4.4.0 answers
    context.clock.advance(2000)
    assert delayed(await b.beat()) == [INITIAL_DELAY] and b.count() == 0  # the delay started with a's join
    context.clock.advance(1000)  # 3 s after the first join: the target is computed for both
    assert delayed(await a.beat()) == [] and delayed(await b.beat()) == []
    assert (a.count(), b.count()) == (2, 2)


async def test_a_new_target_waits_for_the_assignment_interval(context):
    context.group_configs.replace(G, {"streams.initial.rebalance.delay.ms": "0"})
    a, b = Member(context, "a"), Member(context, "b")
    await a.beat()
    assert a.count() == 4  # the first target is computed at once
    context.clock.advance(400)
    assert delayed(await b.beat()) == [INTERVAL_DELAY] and b.count() == 0
    assert delayed(await a.beat()) == [INTERVAL_DELAY] and a.count() == 4
    context.clock.advance(600)  # a second after the first target
    assert delayed(await a.beat()) == [] and a.count() == 2  # a is asked to revoke two
    await a.beat()  # and does
    assert (await b.beat())["error_code"] == 0 and b.count() == 2


async def test_a_member_slow_to_revoke_is_fenced_after_its_rebalance_timeout(context):
    context.group_configs.replace(G, {"streams.initial.rebalance.delay.ms": "0",
                                      "streams.assignment.interval.ms": "0"})
    slow, other = Member(context, "slow", rebalance_timeout_ms=5000), Member(context, "other")
    await slow.beat()
    everything = dict(slow.active)
    await other.beat()
    await slow.beat(keep=everything)  # asked to revoke two; it keeps all four
    for _ in range(4):  # heartbeats do not move its deadline
        context.clock.advance(1000)
        assert (await slow.beat(keep=everything))["error_code"] == Errors.NONE
        await other.beat()
    context.clock.advance(1000)
    answer = await slow.beat(keep=everything)
    assert answer["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert "slow" not in context.groups.streams.groups[G].members
    await other.beat()
    assert other.count() == 4


async def test_a_member_that_revokes_in_time_is_not_fenced(context):
    context.group_configs.replace(G, {"streams.initial.rebalance.delay.ms": "0",
                                      "streams.assignment.interval.ms": "0"})
    quick, other = Member(context, "quick", rebalance_timeout_ms=5000), Member(context, "other")
    await quick.beat()
    await other.beat()
    await quick.beat(keep=quick.active)
    await quick.beat()  # now owns only what it was left
    context.clock.advance(10_000)
    for member in (quick, other):  # past the rebalance timeout, within the session
        assert (await member.beat())["error_code"] == Errors.NONE
    assert (quick.count(), other.count()) == (2, 2)


@pytest.mark.parametrize("settings, message", [
    ({"group.streams.heartbeat.interval.ms": "20000"},
     "group.streams.heartbeat.interval.ms must be less than or equal to group.streams.max.heartbeat.interval.ms"),
    ({"group.streams.session.timeout.ms": "1000", "group.streams.min.session.timeout.ms": "1000"},
     "group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms"),
    ({"group.streams.num.standby.replicas": "3"},
     "group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
])
def test_the_broker_refuses_to_start_with_streams_bounds_kafka_refuses(settings, message):
    with pytest.raises(ConfigError) as refused:
        BrokerConfig(settings)
    assert str(refused.value) == message  # Kafka 4.4's GroupCoordinatorConfig words


async def test_changed_assignment_configs_rebalance_and_missing_client_tags_are_told(context):
    context.group_configs.replace(G, {"streams.initial.rebalance.delay.ms": "0",
                                      "streams.assignment.interval.ms": "0"})
    a = Member(context, "a")
    await a.beat()
    group = context.groups.streams.groups[G]
    epoch = group.group_epoch
    await a.beat()
    assert group.group_epoch == epoch  # nothing changed
    context.group_configs.replace(G, {"streams.initial.rebalance.delay.ms": "0", "streams.assignment.interval.ms": "0",
                                      "streams.rack.aware.assignment.tags": "zone,rack"})
    answer = await a.beat()
    assert group.group_epoch == epoch + 1
    assert answer["status"] == [(6, "Missing required client tags for rack-aware standby assignment: [zone, rack]. "
                                    "Configure them via 'client.tag.<tagKey>' in your Streams config.")]


async def test_a_static_member_that_left_is_not_fenced_by_its_old_deadline(context):
    context.group_configs.replace(G, {"streams.initial.rebalance.delay.ms": "0",
                                      "streams.assignment.interval.ms": "0"})
    static = Member(context, "static", rebalance_timeout_ms=5000, instance_id="i-1")
    other = Member(context, "other")
    await static.beat()
    everything = dict(static.active)
    await other.beat()
    await static.beat(keep=everything)  # asked to revoke; its deadline runs
    assert (await static.beat(keep=everything, epoch=-2))["error_code"] == Errors.NONE  # leaves, keeping its instance
    context.clock.advance(6000)
    assert context.groups.streams.groups[G].members["static"].member_epoch == -2  # still held for its instance


async def test_a_shutdown_request_is_told_to_every_member_until_the_group_empties(context):
    context.group_configs.replace(G, {"streams.initial.rebalance.delay.ms": "0"})
    a, b = Member(context, "a"), Member(context, "b")
    await a.beat()
    await b.beat()
    told = (4, "Streams group member b encountered a fatal error and requested a shutdown for the entire "
               "application.")
    assert told in (await b.beat(shutdown=True))["status"]
    assert told in (await a.beat())["status"]
    for member in (a, b):
        assert (await member.beat(epoch=-1))["error_code"] == Errors.NONE
    again = Member(context, "c")
    assert [code for code, _ in (await again.beat())["status"]] == []  # the group emptied: the request is gone


async def test_a_lone_member_gets_its_tasks_when_the_initial_delay_ends(context):
    a = Member(context, "a")
    assert delayed(await a.beat()) == [INITIAL_DELAY] and a.epoch == 1 and a.count() == 0
    context.clock.advance(3000)
    answer = await a.beat()
    # as Kafka 4.4.0 answers a lone member after the delay: a new epoch, every task
    assert (delayed(answer), a.epoch, a.count()) == ([], 2, 4)
