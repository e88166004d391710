"""The streams member reconciliation (Kafka 4.4's streams CurrentAssignmentBuilder rules), without a
broker: standby tasks revoked before they move, held back while their process still has them, a
standby promoted to active kept until the active task is granted, an active task demoted in place."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from weir.broker.group.consumer.member import MemberState
from weir.broker.group.streams.heartbeat import check_epoch
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import streams_group_heartbeat as hb
from weir.broker.group.streams.group import StreamsGroup, StreamsMember
from weir.broker.group.streams.reconcile import reconcile

F = frozenset
NOTHING = ({}, {}, {})


def group_of(*members):
    group = StreamsGroup("g")
    group.members = {m.member_id: m for m in members}
    return group


def test_a_standby_is_revoked_before_the_member_moves_on():
    m = StreamsMember("m", process_id="p1", member_epoch=3, standby={"0": F({1})}, assigned={"0": F({0})})
    group = group_of(m)
    target = ({"0": F({0})}, {}, {})
    asked = reconcile(group, m, 4, target, ({"0": F({0})}, {"0": F({1})}, {}))
    assert (asked.state, asked.member_epoch, asked.standby, asked.standby_pending_revocation) == (
        MemberState.UNREVOKED_PARTITIONS, 3, {}, {"0": F({1})})
    group.members["m"] = asked
    assert reconcile(group, asked, 4, target, ({"0": F({0})}, {"0": F({1})}, {})) is asked  # still owns it
    done = reconcile(group, asked, 4, target, ({"0": F({0})}, {}, {}))
    assert (done.state, done.member_epoch, done.standby_pending_revocation) == (MemberState.STABLE, 4, {})


def test_a_standby_waits_while_another_member_of_its_process_holds_it():
    holder = StreamsMember("holder", process_id="p1", member_epoch=3, state=MemberState.UNREVOKED_PARTITIONS,
                           standby_pending_revocation={"0": F({1})})
    taker = StreamsMember("taker", process_id="p1", member_epoch=3)
    elsewhere = StreamsMember("elsewhere", process_id="p2", member_epoch=3)
    group = group_of(holder, taker, elsewhere)
    waiting = reconcile(group, taker, 4, ({}, {"0": F({1})}, {}), NOTHING)
    assert (waiting.state, waiting.member_epoch, waiting.standby) == (MemberState.UNRELEASED_PARTITIONS, 4, {})
    other = reconcile(group, elsewhere, 4, ({}, {"0": F({1})}, {}), NOTHING)  # another process: at once
    assert (other.state, other.standby) == (MemberState.STABLE, {"0": F({1})})


def test_a_promoted_standby_stays_one_until_its_active_task_is_granted():
    owner = StreamsMember("owner", process_id="p1", member_epoch=3, state=MemberState.UNREVOKED_PARTITIONS,
                          pending_revocation={"0": F({0})})
    promoted = StreamsMember("promoted", process_id="p2", member_epoch=3, standby={"0": F({0})})
    group = group_of(owner, promoted)
    target = ({"0": F({0})}, {}, {})
    waiting = reconcile(group, promoted, 4, target, ({}, {"0": F({0})}, {}))
    assert (waiting.state, waiting.assigned, waiting.standby) == (MemberState.UNRELEASED_PARTITIONS, {},
                                                                  {"0": F({0})})
    group.members["owner"] = owner.replace(state=MemberState.STABLE, pending_revocation={}, member_epoch=4)
    group.members["promoted"] = waiting
    granted = reconcile(group, waiting, 4, target, ({}, {"0": F({0})}, {}))
    assert (granted.state, granted.assigned, granted.standby) == (MemberState.STABLE, {"0": F({0})}, {})


def test_an_active_task_demoted_to_standby_is_one_at_once():
    m = StreamsMember("m", process_id="p1", member_epoch=3, assigned={"0": F({0, 1})})
    group = group_of(m)
    asked = reconcile(group, m, 4, ({"0": F({1})}, {"0": F({0})}, {}), ({"0": F({0, 1})}, {}, {}))
    assert (asked.state, asked.member_epoch, asked.assigned, asked.standby, asked.pending_revocation) == (
        MemberState.UNREVOKED_PARTITIONS, 3, {"0": F({1})}, {"0": F({0})}, {"0": F({0})})


def test_the_previous_epoch_is_accepted_only_while_the_member_owns_no_more_than_its_tasks():
    m = StreamsMember("m", member_epoch=5, previous_member_epoch=4, assigned={"0": F({0})})

    def request(active):
        return SimpleNamespace(active_tasks=[hb.TaskIds(subtopology_id="0", partitions=active)], standby_tasks=[],
                               warmup_tasks=[])
    check_epoch(4, m, request([0]))  # its answer at 5 was lost: accepted
    with pytest.raises(KafkaError) as fenced:
        check_epoch(4, m, request([0, 1]))  # it claims a task it no longer has
    assert fenced.value.code == Errors.FENCED_MEMBER_EPOCH
