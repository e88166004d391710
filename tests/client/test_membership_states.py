"""The consumer-protocol membership (client/consumer/membership.py, member_*.py) without a broker: its state table
swept, what each heartbeat carries, how answers and errors move the member, and one reconciliation
(revoke before assign, then the acknowledgement), against a stand-in cluster."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from weir.client import TopicPartition
from weir.client.cluster import TopicInfo
from weir.client.consumer.member_state import NONE, PREVIOUS, LocalAssignment, MemberState, new_member_id
from weir.client.consumer.membership import ConsumerGroupMembership
from weir.client.errors import KafkaException
from weir.protocol.errors import Errors
from weir.protocol.messages import consumer_group_heartbeat as cgh

S = MemberState
ORDERS, AUDIT = b"\x01" * 16, b"\x02" * 16


class StandInCluster:
    def __init__(self) -> None:
        self.topics = {"orders": TopicInfo("orders", {0: 1, 1: 1, 2: 1}, 0, ORDERS)}
        self.refreshed = 0

    async def refresh(self, topics: list[str] | None = None, **_kwargs: Any) -> None:
        self.refreshed += 1
        self.topics["audit"] = TopicInfo("audit", {0: 1}, 0, AUDIT)


def membership(instance_id: str | None = None, events: list[tuple[str, list[TopicPartition]]] | None = None
               ) -> ConsumerGroupMembership:
    log = events if events is not None else []

    def hook(name: str) -> Any:
        async def record(partitions: list[TopicPartition]) -> None:
            log.append((name, partitions))
        return record
    member = ConsumerGroupMembership(StandInCluster(), "g", group_instance_id=instance_id,  # type: ignore[arg-type]
                                     remote_assignor="range", rebalance_timeout_ms=30000, isolation_level=1,
                                     on_assigned=hook("assigned"), on_revoked=hook("revoked"), on_lost=hook("lost"))
    member.subscribe(["orders"])
    return member


def answer(epoch: int, assignment: dict[bytes, list[int]] | None, interval_ms: int = 1000) -> Any:
    given = None if assignment is None else SimpleNamespace(
        topic_partitions=[cgh.TopicPartitions(topic_id=t, partitions=p) for t, p in assignment.items()])
    return SimpleNamespace(error_code=0, error_message=None, member_id=None, member_epoch=epoch,
                           heartbeat_interval_ms=interval_ms, assignment=given)


@pytest.mark.parametrize("source", list(MemberState), ids=lambda s: s.name)
@pytest.mark.parametrize("target", list(MemberState), ids=lambda s: s.name)
def test_every_transition_is_allowed_exactly_when_the_table_says(source, target):
    member = membership()
    member.state = source
    if source is target or source in PREVIOUS[target]:
        member.transition_to(target)
        assert member.state is target
    else:
        with pytest.raises(AssertionError):
            member.transition_to(target)
        assert member.state is source


def test_a_member_id_is_a_uuid_in_kafkas_base64_form_and_new_every_time():
    ids = {new_member_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 22 and "=" not in i and "+" not in i and "/" not in i for i in ids)


def test_the_local_epoch_moves_only_for_a_different_assignment():
    first = NONE.updated({})
    assert first == LocalAssignment(0, {})  # an empty first assignment is still one to reconcile
    assert first.updated({}) is None
    assert first.updated({ORDERS: frozenset({1})}) == LocalAssignment(1, {ORDERS: frozenset({1})})


async def test_joining_sends_everything_then_only_what_changed():
    member = membership()
    await member.ensure_active()
    member._heartbeat_task.cancel()  # type: ignore[union-attr]
    assert member.state is S.JOINING
    join = member._build_request()(1)
    assert (join.member_epoch, join.rebalance_timeout_ms, join.subscribed_topic_names, join.server_assignor,
            join.topic_partitions, join.subscribed_topic_regex) == (0, 30000, ["orders"], "range", [], None)
    assert join.member_id == member.member_id and len(join.member_id) == 22  # KIP-1082: ours from the start
    member._on_success(answer(5, {}))
    assert member.state is S.RECONCILING and member.member_epoch == 5
    member.transition_to(S.STABLE)
    quiet = member._build_request()(1)
    assert (quiet.rebalance_timeout_ms, quiet.subscribed_topic_names, quiet.server_assignor,
            quiet.topic_partitions) == (-1, None, None, None)
    member.subscribe(["orders", "audit"])
    changed = member._build_request()(1)
    assert changed.subscribed_topic_names == ["orders", "audit"] and changed.topic_partitions is None
    assert member._build_request()(0).member_id == member.member_id  # v0 past joining: the id it was given


async def test_a_regex_subscription_is_sent_as_subscribed_topic_regex_and_needs_v1():
    member = membership()
    member.topics, member.regex = [], "orders-.*"
    await member.ensure_active()
    member._heartbeat_task.cancel()  # type: ignore[union-attr]
    build = member._build_request()
    join = build(1)
    assert (join.subscribed_topic_regex, join.subscribed_topic_names) == ("orders-.*", None)
    with pytest.raises(KafkaException):
        build(0)


@pytest.mark.parametrize("code", [Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID])
async def test_fencing_loses_the_partitions_and_joins_again_at_epoch_0_with_the_same_id(code):
    events: list[tuple[str, list[TopicPartition]]] = []
    member = membership(events=events)
    member.state, member.member_epoch = S.STABLE, 7
    member.owned = {TopicPartition("orders", 0)}
    member_id = member.member_id
    member._on_error(code, "fenced")
    assert (member.state, member.member_epoch) == (S.FENCED, 0)
    assert member.rejoin_needed.is_set()
    await member.ensure_active()
    member._heartbeat_task.cancel()  # type: ignore[union-attr]
    assert events == [("lost", [TopicPartition("orders", 0)])]  # lost: no commit, unlike a revocation
    assert (member.state, member.member_epoch, member.member_id) == (S.JOINING, 0, member_id)


@pytest.mark.parametrize("code", [Errors.UNRELEASED_INSTANCE_ID, Errors.FENCED_INSTANCE_ID, Errors.INVALID_REQUEST,
                                  Errors.GROUP_MAX_SIZE_REACHED, Errors.UNSUPPORTED_ASSIGNOR,
                                  Errors.GROUP_AUTHORIZATION_FAILED, Errors.UNSUPPORTED_VERSION])
async def test_other_errors_are_fatal_and_raised_by_the_next_getmany(code):
    member = membership("instance-1")
    member.state = S.STABLE
    member._on_error(code, "no")
    assert member.state is S.FATAL
    with pytest.raises(KafkaException) as raised:
        await member.ensure_active()
    assert raised.value.code == code  # type: ignore[attr-defined]


async def test_a_reconciliation_revokes_before_it_assigns_then_acknowledges_the_new_owned_set():
    events: list[tuple[str, list[TopicPartition]]] = []
    member = membership(events=events)
    member.state, member.member_epoch = S.STABLE, 3
    member.current = member.target = LocalAssignment(0, {ORDERS: frozenset({0, 1})})
    member.owned = {TopicPartition("orders", 0), TopicPartition("orders", 1)}
    member._on_success(answer(4, {ORDERS: [1, 2], AUDIT: [0]}))  # audit's id is not in the metadata yet
    assert member.state is S.RECONCILING and member.rejoin_needed.is_set()
    await member.ensure_active()
    member._heartbeat_task.cancel()  # type: ignore[union-attr]
    assert member.cluster.refreshed == 1  # type: ignore[attr-defined]  # asked Metadata for the unknown id
    assert events == [("revoked", [TopicPartition("orders", 0)]),
                      ("assigned", [TopicPartition("audit", 0), TopicPartition("orders", 2)])]
    assert member.owned == {TopicPartition("orders", 1), TopicPartition("orders", 2), TopicPartition("audit", 0)}
    assert member.state is S.ACKNOWLEDGING
    ack = member._build_request()(1)
    assert {(t.topic_id, tuple(t.partitions)) for t in ack.topic_partitions} == {(ORDERS, (1, 2)), (AUDIT, (0,))}
    assert member.state is S.STABLE  # the acknowledgement is on its way
    assert member._build_request()(1).topic_partitions is None  # and is not sent twice


@pytest.mark.parametrize(("instance", "epoch"), [(None, -1), ("instance-1", -2)])
async def test_closing_revokes_and_leaves_with_minus_one_or_minus_two_when_static(instance, epoch):
    events: list[tuple[str, list[TopicPartition]]] = []
    member = membership(instance, events)
    sent: list[Any] = []

    async def call(_target: Any, _api: Any, build: Any, **_kwargs: Any) -> Any:
        sent.append(build(1))
        return answer(epoch, None)
    member.cluster.call = call  # type: ignore[method-assign]
    member.state, member.member_epoch = S.STABLE, 9
    member.owned = {TopicPartition("orders", 2)}
    await member.close()
    assert events == [("revoked", [TopicPartition("orders", 2)])]
    assert [(r.member_epoch, r.instance_id) for r in sent] == [(epoch, instance)]
    assert member.state is S.UNSUBSCRIBED


def test_an_answer_to_a_heartbeat_sent_before_fencing_is_ignored():
    member = membership()
    member.state, member.member_epoch = S.FENCED, 0
    member._on_success(answer(12, {ORDERS: [0]}))
    assert (member.state, member.member_epoch, member.target) == (S.FENCED, 0, NONE)


def test_the_error_policy_decides_rejoin_or_fatal_for_heartbeats():
    from weir.client.error_policy import Outcome, classify
    from weir.protocol.api_keys import ApiKey
    heartbeat = ApiKey.CONSUMER_GROUP_HEARTBEAT
    assert classify(heartbeat, Errors.FENCED_MEMBER_EPOCH) is classify(heartbeat, Errors.UNKNOWN_MEMBER_ID) \
        is Outcome.ABORTABLE
    assert classify(heartbeat, Errors.UNRELEASED_INSTANCE_ID) is Outcome.FATAL
    assert classify(heartbeat, Errors.NOT_COORDINATOR) is Outcome.RETRIABLE  # the call path's to retry


async def test_a_broker_without_consumer_group_heartbeat_is_fatal_as_in_java():
    from weir.client.errors import error_instance
    member = membership()

    async def call(*_args: Any, **_kwargs: Any) -> Any:
        raise error_instance(Errors.UNSUPPORTED_VERSION, "no ConsumerGroupHeartbeat")
    member.cluster.call = call  # type: ignore[method-assign]
    member.cluster.backoff_policy = lambda: None  # type: ignore[method-assign]
    await member.ensure_active()  # joins: the heartbeat task starts
    await asyncio.wait_for(member._heartbeat_task, 5)  # type: ignore[arg-type]  # ends: the member is FATAL
    assert member.state is S.FATAL
    with pytest.raises(KafkaException) as raised:
        await member.ensure_active()
    assert raised.value.code == Errors.UNSUPPORTED_VERSION  # type: ignore[attr-defined]


@pytest.mark.parametrize("protocol, setting", [
    ("consumer", {"session_timeout_ms": 10000}), ("consumer", {"heartbeat_interval_ms": 1000}),
    ("consumer", {"partition_assignment_strategy": ["range"]}), ("classic", {"group_remote_assignor": "uniform"})])
def test_each_protocol_refuses_the_other_protocols_member_settings_as_java(protocol, setting):
    """Java's ConfigException: '<name> cannot be set when group.protocol=<protocol>'."""
    from weir.client import Consumer
    with pytest.raises(ValueError, match=f"{next(iter(setting))} cannot be set when group_protocol={protocol}"):
        Consumer(group_id="g", group_protocol=protocol, **setting)
