"""Streams groups (KIP-1071) sent raw to Weir and to Kafka 4.4.0, timing and assignment configs: the
initial rebalance delay and the assignment interval (status ASSIGNMENT_DELAYED), a member fenced after
its rebalance timeout, standby placement (none for a stateless subtopology, none on one process),
changed assignment configs and missing client tags, invalid owned tasks and task offsets, OffsetCommit
below v9 from a member, and Kafka's internal group configs. Helpers are those of
test_differential_streams_groups.py; each scenario uses groups of its own, with the group configs
that show what it looks at.
"""

from __future__ import annotations

import uuid

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
import pytest

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import offset_commit, streams_group_describe, streams_group_heartbeat as hb
from tests.features.raw import ask
from tests.reference.test_differential_consumer_heartbeat import coordinator_ready
from tests.reference.test_differential_share_groups import set_group_configs
from tests.reference.test_differential_streams_groups import (PARTITIONS, Member, _error, _statuses, _until,
                                                               _without)


def stateless(source: str):
    return hb.Topology(epoch=1, subtopologies=[hb.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[], state_changelog_topics=[],
        repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])


def _answer(answer, exact_epoch=False):
    """The epoch exactly only where both must agree on it (elsewhere Kafka's first target may take one
    epoch more, see ``_error``)."""
    epoch = answer.member_epoch if exact_epoch else answer.member_epoch > 0
    return (answer.error_code, epoch, [(s.status_code, s.status_detail) for s in answer.status or []],
            answer.active_tasks and sum(len(t.partitions) for t in answer.active_tasks))


def _described(broker, group):
    found = ask(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, streams_group_describe.REQUEST(
        group_ids=[group], include_authorized_operations=False)).groups[0]
    return sorted((m.process_id, sum(len(t.partitions) for t in m.assignment.active_tasks),
                   sum(len(t.partitions) for t in m.assignment.standby_tasks),
                   sum(len(t.partitions) for t in m.assignment.warmup_tasks)) for m in found.members)


def rebalance_scenario(broker) -> dict:
    """The initial rebalance delay, the assignment interval, a member fenced after its rebalance timeout,
    standbys (none for a stateless subtopology), warm-ups (none), duplicate task offsets and an
    OffsetCommit below v9, each on a group of its own with the group configs that show it."""
    suffix = uuid.uuid4().hex[:8]
    source, app = f"streams-rb-src-{suffix}", f"streams-rb-{suffix}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(source, PARTITIONS, 1)])[source].result(30)
    # Kafka's group coordinator sees a new topic through its metadata image a moment later: a probe
    # group heartbeats until its topology finds the source, so that the groups below see it at once
    coordinator_ready(broker, f"{app}-probe")
    probe = Member(broker, f"{app}-probe", source, "probe")

    def found():
        answer = probe.beat(probe.epoch, stateless(source) if probe.epoch == 0 else None)
        return True if answer.error_code == 0 and 1 not in _statuses(answer) else None
    _until("the source topic seen by the group coordinator", found)
    probe.beat(-1)
    seen: dict = {}

    # the initial delay: two members join an empty group, no tasks until it ends, then two each and
    # no standby for a stateless subtopology (streams.num.standby.replicas 1)
    delayed = f"{app}-delayed"
    coordinator_ready(broker, delayed)
    set_group_configs(broker, delayed, streams_initial_rebalance_delay_ms=3000, streams_num_standby_replicas=1)
    a, b = Member(broker, delayed, source, "process-a"), Member(broker, delayed, source, "process-b")
    seen["delayed join"] = [_answer(a.beat(0, stateless(source)), exact_epoch=True),
                            _answer(b.beat(0, stateless(source)), exact_epoch=True)]

    def shared():
        for member in (a, b):  # a member still at epoch 0 joins again, with its topology
            member.beat(member.epoch, stateless(source) if member.epoch == 0 else None)
        counts = (a.task_count(), b.task_count())
        return counts if counts == (PARTITIONS // 2, PARTITIONS // 2) else None
    seen["after the delay"] = _until("tasks after the initial delay", shared)
    seen["standby and warm-up tasks"] = _described(broker, delayed)
    seen["duplicate task offsets"] = _error(a.beat(task_offsets=[hb.TaskOffset(subtopology_id="0", partition=0,
                                                                               offset=1)] * 2))
    held = a.active
    for label, claimed in (("unknown subtopology", {"9": [0]}), ("task out of range", {"0": [PARTITIONS]})):
        a.active = claimed
        seen[label] = _error(a.beat())
    a.active = held

    # a member asks the application to shut down: every member is told so
    seen["shutdown asked"] = [(st.status_code, st.status_detail) for st in b.beat(shutdown_application=True).status]
    seen["shutdown told"] = [(st.status_code, st.status_detail) for st in a.beat().status]

    # OffsetCommit below v9 from a member of a streams group
    def commit(version):
        answer = ask(broker, ApiKey.OFFSET_COMMIT, version, offset_commit.REQUEST(
            group_id=delayed, generation_id_or_member_epoch=a.epoch, member_id=a.member_id, topics=[
                offset_commit.RequestTopic(name=source, partitions=[offset_commit.RequestPartition(
                    partition_index=p, committed_offset=0, committed_metadata="") for p in a.active.get("0", [])])]))
        return sorted({p.error_code for t in answer.topics for p in t.partitions})
    seen["offset commit v8, v9"] = (commit(8), commit(9))

    # changed assignment configs bump the group epoch; rack-aware tags the member lacks are a status
    def group_epoch():
        return ask(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, streams_group_describe.REQUEST(
            group_ids=[delayed], include_authorized_operations=False)).groups[0].group_epoch
    before = group_epoch()
    set_group_configs(broker, delayed, streams_num_standby_replicas=0, streams_rack_aware_assignment_tags="zone")
    answer = a.beat()
    seen["assignment configs changed"] = (group_epoch() - before, [
        (code, detail) for code, detail in ((st.status_code, st.status_detail) for st in answer.status or [])
        if code == 6])

    # the assignment interval: a second member within it is told so and waits
    interval = f"{app}-interval"
    coordinator_ready(broker, interval)
    set_group_configs(broker, interval, streams_initial_rebalance_delay_ms=0, streams_assignment_interval_ms=15000)
    first, second = Member(broker, interval, source, "process-c"), Member(broker, interval, source, "process-d")
    seen["interval first join"] = _answer(first.beat(0, stateless(source)))
    seen["interval second join"] = _answer(second.beat(0, stateless(source)))
    seen["interval first again"] = _answer(first.beat())

    # a member that never revokes is fenced after its rebalance timeout (its session would last longer)
    slow = f"{app}-slow"
    coordinator_ready(broker, slow)
    set_group_configs(broker, slow, streams_initial_rebalance_delay_ms=0, streams_assignment_interval_ms=0)
    holder, taker = Member(broker, slow, source, "process-e"), Member(broker, slow, source, "process-f")
    holder.rebalance_timeout_ms = 1000
    holder.beat(0, stateless(source))
    _until("the holder's tasks", lambda: True if (holder.beat(), holder.task_count())[1] == PARTITIONS else None)
    everything = dict(holder.active)
    taker.beat(0, stateless(source))

    def fenced():
        holder.active = dict(everything)  # it keeps claiming every task
        answer = holder.beat()
        return _error(answer) if answer.error_code else None
    seen["never revoked"] = _until("the holder fenced", fenced)

    def taken():
        taker.beat()
        return taker.task_count() if taker.task_count() == PARTITIONS else None
    seen["taker's tasks"] = _until("the taker's tasks", taken)
    # standby tasks of a stateful subtopology: one per task on the other process; alone, none
    standbys = f"{app}-standby"
    coordinator_ready(broker, standbys)
    set_group_configs(broker, standbys, streams_assignment_interval_ms=0, streams_num_standby_replicas=1)
    stateful = hb.Topology(epoch=1, subtopologies=[hb.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[], repartition_sink_topics=[],
        state_changelog_topics=[hb.TopicInfo(name=f"{standbys}-store-changelog", partitions=0, replication_factor=1,
                                             topic_configs=[hb.KeyValue(key="cleanup.policy", value="compact")])],
        repartition_source_topics=[], copartition_groups=[])])
    left, right = Member(broker, standbys, source, "process-g"), Member(broker, standbys, source, "process-h")
    left.beat(0, stateful)
    right.beat(0, stateful)

    def settled_standbys(members, expected):
        def check():
            for member in members:
                member.beat()
            found = _described(broker, standbys)
            return found if [(active, standby) for _p, active, standby, _w in found] == expected else None
        return check
    seen["standbys of two processes"] = _until("standbys on both processes",
                                               settled_standbys((left, right), [(2, 2), (2, 2)]))
    right.beat(-1)
    seen["standbys of one process"] = _until("one process left", settled_standbys((left,), [(4, 0)]))
    for member in (a, b, first, second, taker, left):
        member.beat(-1)
    return {key: _without(value, {suffix: "", holder.member_id: "M", b.member_id: "B"}) for key, value in seen.items()}


@pytest.mark.timeout(300)
def test_rebalance_timing_as_kafka(weir_process, kafka_broker):
    weir, kafka = rebalance_scenario(weir_process), rebalance_scenario(kafka_broker)
    assert weir["interval second join"][2] == [(5, "Assignment delayed due to the configured assignment interval.")]
    assert weir["never revoked"][0] == 25  # UNKNOWN_MEMBER_ID
    differing = {key: (weir[key], kafka.get(key)) for key in weir if weir[key] != kafka.get(key)}
    assert not differing, "\n".join(f"{k}:\n  weir  {w}\n  kafka {kf}" for k, (w, kf) in differing.items())


def internal_configs_scenario(broker) -> dict:
    """Kafka's internal streams group configs: settable per group, bounded by the broker's settings,
    described only where set, and the heartbeat answers the group's acceptable recovery lag and task
    offset interval."""
    suffix = uuid.uuid4().hex[:8]
    source, group = f"streams-ic-src-{suffix}", f"streams-ic-{suffix}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(source, 1, 1)])[source].result(30)
    coordinator_ready(broker, group)
    resource = ConfigResource(ResourceType.GROUP, group)

    def described():
        return sorted(name for name in admin.describe_configs([resource])[resource].result(30) if "streams" in name)
    seen: dict = {"described": described()}
    for name, value in (("streams_task_offset_interval_ms", 1000), ("streams_num_warmup_replicas", 50)):
        try:
            set_group_configs(broker, group, **{name: value})
            seen[name] = "accepted"
        except KafkaException as exc:
            seen[name] = (exc.args[0].code(), exc.args[0].str())
    set_group_configs(broker, group, streams_acceptable_recovery_lag=5, streams_task_offset_interval_ms=20000)
    seen["described when set"] = described()
    answer = Member(broker, group, source, "process-i").beat(0, stateless(source))
    seen["answer"] = (answer.error_code, answer.acceptable_recovery_lag, answer.task_offset_interval_ms)
    return seen


def test_internal_group_configs_as_kafka(weir_process, kafka_broker):
    weir, kafka = internal_configs_scenario(weir_process), internal_configs_scenario(kafka_broker)
    assert weir["answer"] == (0, 5, 20000)
    differing = {key: (weir[key], kafka.get(key)) for key in weir if weir[key] != kafka.get(key)}
    assert not differing, "\n".join(f"{k}:\n  weir  {w}\n  kafka {kf}" for k, (w, kf) in differing.items())
