"""Streams groups (KIP-1071) sent raw (our codec) to Weir and to Kafka 4.4.0, one script on both:
the same error codes and messages for invalid heartbeats, unknown members and fenced epochs; the
same statuses for a topology whose source topic is missing; the internal topics the broker creates
(partition counts from the source topic, configs from the topology); the tasks a first member is
given, the revocation a second member's join starts and the even split it ends in; the same
StreamsGroupDescribe, ListGroups and DeleteGroups answers.

Where the two may differ, the script does not look: Kafka sees a created topic through its metadata
image a moment later (the script heartbeats until the statuses settle), and which of the tasks each
of two members ends up with is the assignor's choice (the script compares counts and that no task
is held twice). Timing, assignment configs and the rest: test_differential_streams_rebalance.py.
"""

from __future__ import annotations

import re
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from weir.protocol.api_keys import ApiKey
from weir.protocol.messages import (consumer_group_heartbeat, delete_groups, describe_configs, list_groups,
                                    streams_group_describe, streams_group_heartbeat as hb)
from tests.features.raw import ask
from tests.reference.test_differential_consumer_heartbeat import coordinator_ready, topic_assignable

PARTITIONS = 4
INTERVAL = 0.5  # group.streams.heartbeat.interval.ms in the shared test settings


def topology(source: str, app: str, epoch: int = 1):
    """Two subtopologies: the source re-keyed into a repartition topic, which a stateful one reads."""
    compact = [hb.KeyValue(key="cleanup.policy", value="compact")]
    return hb.Topology(epoch=epoch, subtopologies=[
        hb.Subtopology(subtopology_id="0", source_topics=[source], source_topic_regex=[], state_changelog_topics=[],
                       repartition_sink_topics=[f"{app}-rekey-repartition"], repartition_source_topics=[],
                       copartition_groups=[]),
        hb.Subtopology(subtopology_id="1", source_topics=[], source_topic_regex=[],
                       state_changelog_topics=[hb.TopicInfo(name=f"{app}-store-changelog", partitions=0,
                                                            replication_factor=1, topic_configs=compact)],
                       repartition_sink_topics=[],
                       repartition_source_topics=[hb.TopicInfo(name=f"{app}-rekey-repartition", partitions=0,
                                                               replication_factor=1, topic_configs=[])],
                       copartition_groups=[])])


class Member:
    def __init__(self, broker, group: str, source: str, process: str):
        self.broker, self.group, self.source = broker, group, source
        self.member_id, self.process = str(uuid.uuid4()), process
        self.epoch = 0
        self.active: dict[str, list[int]] = {}
        self.rebalance_timeout_ms = 30000

    def beat(self, epoch=None, join_topology=None, owned=True, member_id=None, **changes):
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        tasks = [hb.TaskIds(subtopology_id=s, partitions=p) for s, p in sorted(self.active.items())]
        request = hb.REQUEST(
            group_id=self.group, member_id=member_id or self.member_id, member_epoch=epoch,
            endpoint_information_epoch=0, rebalance_timeout_ms=self.rebalance_timeout_ms if joining else -1,
            topology=join_topology if joining else None, process_id=self.process if joining else None,
            active_tasks=[] if joining else (tasks if owned else None),
            standby_tasks=[] if joining else ([] if owned else None),
            warmup_tasks=[] if joining else ([] if owned else None), **changes)
        answer = settled(self.broker, ApiKey.STREAMS_GROUP_HEARTBEAT, request)
        if answer.error_code == 0 and epoch >= 0:
            self.epoch = answer.member_epoch
            if answer.active_tasks is not None:
                self.active = {t.subtopology_id: sorted(t.partitions) for t in answer.active_tasks if t.partitions}
        return answer

    def task_count(self) -> int:
        return sum(map(len, self.active.values()))


# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: Kafka loading a partition
# (a Kafka just started answers NOT_COORDINATOR a moment after FindCoordinator found it)
RETRIABLE = {14, 15, 16}


def settled(broker, api_key, request, version=1):
    """The final answer, not a retriable first one: Kafka may still be loading the group's partition."""
    end = time.monotonic() + 60
    while True:
        answer = ask(broker, api_key, version, request)
        if answer.error_code not in RETRIABLE or time.monotonic() > end:
            return answer
        time.sleep(0.2)  # poll interval of a deadline-bounded wait on Kafka's loading


def _error(answer):
    """Epochs in a message are the broker's (Kafka's first assignment may take one epoch more)."""
    return answer.error_code, re.sub(r"\(\d+\)", "(N)", answer.error_message or "") or None


def _status(status):
    """Kafka lists missing internal topics in no fixed order: sorted here."""
    code, detail = status.status_code, status.status_detail
    head, colon, names = detail.partition(": ")
    return code, head + colon + ", ".join(sorted(names.split(", "))) if colon else detail


def _statuses(answer):
    return sorted(s.status_code for s in answer.status or [])


def _until(what, check, deadline=60.0):
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value is not None:
            return value
        assert time.monotonic() < end, f"{what}: not within {deadline} s"
        time.sleep(INTERVAL)  # a member heartbeats at its interval; so does the script


def scenario(broker) -> dict:
    suffix = uuid.uuid4().hex[:8]
    source, app = f"streams-src-{suffix}", f"streams-app-{suffix}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(source, PARTITIONS, 1)])[source].result(30)
    topic_assignable(broker, source)  # Kafka's group coordinator sees the topic a moment after
    coordinator_ready(broker, app)
    seen: dict = {}
    first = Member(broker, app, source, "process-a")

    # invalid heartbeats
    seen["no topology"] = _error(first.beat(0, None))
    seen["no rebalance timeout"] = _error(settled(broker, ApiKey.STREAMS_GROUP_HEARTBEAT, hb.REQUEST(
        group_id=app, member_id=first.member_id, member_epoch=0, endpoint_information_epoch=0,
        topology=topology(source, app), process_id="p", active_tasks=[], standby_tasks=[], warmup_tasks=[])))
    seen["bad epoch"] = _error(first.beat(-3))
    seen["unknown group"] = _error(first.beat(5))

    # a missing source topic: the member joins, with a status and no tasks
    lost = Member(broker, f"{app}-lost", source, "process-l")
    coordinator_ready(broker, f"{app}-lost")
    answer = lost.beat(0, topology(f"{source}-missing", f"{app}-lost"))
    seen["missing source"] = (answer.error_code, [_status(s) for s in answer.status or []],
                              answer.active_tasks or [])

    # the first member: internal topics created, then every task
    answer = first.beat(0, topology(source, app))
    seen["first join status"] = [_status(s) for s in answer.status or []]
    seen["first join"] = (answer.error_code, answer.member_epoch > 0)

    def all_tasks():
        reply = first.beat()
        return (_statuses(reply), first.active) if first.task_count() == 2 * PARTITIONS else None
    seen["first member's tasks"] = _until("the first member's tasks", all_tasks)
    topics = admin.list_topics(timeout=30).topics
    seen["internal topics"] = {name.replace(suffix, ""): len(topics[name].partitions) for name in topics
                               if name.startswith(app)}
    configs = ask(broker, ApiKey.DESCRIBE_CONFIGS, 4, describe_configs.REQUEST(resources=[
        describe_configs.Resource(resource_type=2, resource_name=f"{app}-store-changelog",
                                  configuration_keys=["cleanup.policy"])], include_synonyms=False,
        include_documentation=False))
    seen["changelog policy"] = [(c.name, c.value) for c in configs.results[0].configs]

    # errors of a known member
    seen["fenced"] = _error(first.beat(first.epoch + 10))
    stranger = str(uuid.uuid4())
    seen["unknown member"] = _error(first.beat(first.epoch, member_id=stranger))
    seen["consumer on a streams id"] = _error(settled(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                                  consumer_group_heartbeat.REQUEST(
                                                      group_id=app, member_id=str(uuid.uuid4()), member_epoch=0,
                                                      rebalance_timeout_ms=30000, subscribed_topic_names=[source])))

    # a second member: the first gives up half its tasks before the second gets them
    second = Member(broker, app, source, "process-b")
    second.beat(0, topology(source, app))
    revoked_first = []

    def balanced():
        before = first.task_count()
        first.beat()
        if first.task_count() < before:
            revoked_first.append(first.task_count())
        second.beat()
        counts = (first.task_count(), second.task_count())
        return counts if counts == (PARTITIONS, PARTITIONS) else None
    seen["split"] = _until("an even split", balanced)
    seen["revoked before assigned"] = bool(revoked_first)
    held = [(s, p) for m in (first, second) for s, parts in m.active.items() for p in parts]
    seen["no task held twice"] = len(held) == len(set(held)) == 2 * PARTITIONS

    described = {g.group_id: g for g in ask(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, streams_group_describe.REQUEST(
        group_ids=[app, f"{app}-none"], include_authorized_operations=False)).groups}
    group = described[app]
    seen["describe"] = (group.error_code, group.group_state, group.group_epoch == group.assignment_epoch,
                        sorted((m.process_id, m.member_epoch == group.assignment_epoch,
                                sum(len(t.partitions) for t in m.assignment.active_tasks)) for m in group.members),
                        [(s.subtopology_id, s.source_topics, s.repartition_sink_topics,
                          [(t.name, t.partitions) for t in s.repartition_source_topics],
                          [(t.name, t.partitions) for t in s.state_changelog_topics])
                         for s in group.topology.subtopologies or []] if group.topology is not None else None)
    none = described[f"{app}-none"]
    seen["describe unknown"] = (none.error_code, none.error_message.replace(suffix, ""))
    listed = ask(broker, ApiKey.LIST_GROUPS, 5, list_groups.REQUEST(states_filter=[], types_filter=["streams"]))
    seen["listed"] = sorted((g.group_id.replace(suffix, ""), g.protocol_type, g.group_state, g.group_type)
                            for g in listed.groups if suffix in g.group_id)

    # leaving: the group empties and can be deleted
    for member in (first, second, lost):
        seen.setdefault("left", []).append(member.beat(-1).error_code)
    deleted = ask(broker, ApiKey.DELETE_GROUPS, 2, delete_groups.REQUEST(groups_names=[app, f"{app}-none"]))
    seen["deleted"] = sorted((r.group_id.replace(suffix, ""), r.error_code) for r in deleted.results)
    # names differ by the run's suffix and random member ids: compared without them
    return {key: _without(value, {suffix: "", stranger: "M"}) for key, value in seen.items()}


def _without(value, replacements: dict[str, str]):
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {_without(k, replacements): _without(v, replacements) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_without(item, replacements) for item in value)
    return value


@pytest.mark.timeout(300)
def test_streams_group_heartbeats_as_kafka(weir_process, kafka_broker):
    weir, kafka = scenario(weir_process), scenario(kafka_broker)
    assert weir["first member's tasks"][1] == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert weir["split"] == (PARTITIONS, PARTITIONS) and weir["no task held twice"]
    differing = {key: (weir[key], kafka.get(key)) for key in weir if weir[key] != kafka.get(key)}
    assert not differing, "\n".join(f"{k}:\n  weir  {w}\n  kafka {kf}" for k, (w, kf) in differing.items())


def static_scenario(broker) -> dict:
    """A static member (group.instance.id) leaving with -2 and coming back under a new member id."""
    suffix = uuid.uuid4().hex[:8]
    source, app = f"streams-static-src-{suffix}", f"streams-static-{suffix}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(source, 2, 1)])[source].result(30)
    topic_assignable(broker, source)
    coordinator_ready(broker, app)
    plain = hb.Topology(epoch=1, subtopologies=[hb.Subtopology(
        subtopology_id="0", source_topics=[source], source_topic_regex=[], state_changelog_topics=[],
        repartition_sink_topics=[], repartition_source_topics=[], copartition_groups=[])])
    seen: dict = {}
    first = Member(broker, app, source, "process-s")
    first.beat(0, plain, instance_id="instance-1")
    seen["tasks"] = _until("the static member's tasks",
                           lambda: first.active if (first.beat(), first.task_count())[1] == 2 else None)
    twin = Member(broker, app, source, "process-s")
    seen["instance taken"] = _error(twin.beat(0, plain, instance_id="instance-1"))
    seen["static leave"] = (first.beat(-2, instance_id="instance-1").error_code,)
    answer = twin.beat(0, plain, instance_id="instance-1")
    seen["comes back"] = (answer.error_code, twin.active)
    seen["old id fenced"] = _error(first.beat(first.epoch, instance_id="instance-1"))
    return {key: _without(value, {suffix: "", first.member_id: "OLD", twin.member_id: "NEW"})
            for key, value in seen.items()}


def test_static_members_as_kafka(weir_process, kafka_broker):
    weir, kafka = static_scenario(weir_process), static_scenario(kafka_broker)
    assert weir["comes back"] == (0, {"0": [0, 1]})  # the instance's tasks, at once
    differing = {key: (weir[key], kafka.get(key)) for key in weir if weir[key] != kafka.get(key)}
    assert not differing, "\n".join(f"{k}:\n  weir  {w}\n  kafka {kf}" for k, (w, kf) in differing.items())

