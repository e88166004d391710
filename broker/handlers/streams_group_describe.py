"""StreamsGroupDescribe (89), v0-1: streams groups with their topology, members (process, endpoint,
client tags, task offsets) and each member's current and target tasks.

An unknown id answers GROUP_ID_NOT_FOUND ("Group g not found."), a classic, consumer or share
group's id GROUP_ID_NOT_FOUND ("Group g is not a streams group."). ACLs: DESCRIBE on the group;
the authorized operations only when asked for (INT32_MIN otherwise). v1's topology description is
never held (members are never asked to push it): its status is 0 and the description null.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import streams_group_describe as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..features import STREAMS_VERSION
from ..group.streams.assignor import NAME as ASSIGNOR_NAME


def _tasks(tasks):
    return [msg.TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in sorted(tasks.items())]


def _info(info, partitions):
    return msg.TopicInfo(name=info.name, partitions=partitions, replication_factor=info.replication_factor,
                         topic_configs=[msg.KeyValue(key=k, value=v) for k, v in info.configs])


def _topology(group, topics):
    if group.topology is None:
        return msg.Topology(epoch=-1, subtopologies=None)
    def count(name):
        topic = topics.get(name)
        return len(topic.partitions) if topic is not None else 0
    return msg.Topology(epoch=group.topology.epoch, subtopologies=[msg.Subtopology(
        subtopology_id=s.subtopology_id, source_topics=list(s.source_topics) + list(s.source_topic_regex),
        repartition_sink_topics=list(s.repartition_sink_topics),
        state_changelog_topics=[_info(t, count(t.name)) for t in s.state_changelog_topics],
        repartition_source_topics=[_info(t, count(t.name)) for t in s.repartition_source_topics])
        for s in group.topology.subtopologies])


def _offsets(entries):
    return [msg.TaskOffset(subtopology_id=s, partition=p, offset=o) for s, p, o in entries]


def _member(member, target):
    active, standby = target
    endpoint = member.user_endpoint
    return msg.Member(
        member_id=member.member_id, member_epoch=member.member_epoch, instance_id=member.instance_id,
        rack_id=member.rack_id, client_id=member.client_id, client_host=member.client_host,
        topology_epoch=member.topology_epoch, process_id=member.process_id,
        user_endpoint=msg.Endpoint(host=endpoint[0], port=endpoint[1]) if endpoint is not None else None,
        client_tags=[msg.KeyValue(key=k, value=v) for k, v in member.client_tags],
        task_offsets=_offsets(member.task_offsets), task_end_offsets=_offsets(member.task_end_offsets),
        assignment=msg.Assignment(active_tasks=_tasks(member.assigned), standby_tasks=_tasks(member.standby),
                                  warmup_tasks=_tasks(member.warmup)),
        target_assignment=msg.Assignment(active_tasks=_tasks(active), standby_tasks=_tasks(standby), warmup_tasks=[]),
        is_classic=False)


@handles(ApiKey.STREAMS_GROUP_DESCRIBE, versions=(0, 1))
def handle(context, header, request, session=None):
    groups = context.groups
    described = []
    for group_id in request.group_ids:
        answer = msg.DescribedGroup(error_code=Errors.NONE, group_id=group_id, group_state="", group_epoch=0,
                                    assignment_epoch=0, members=[])
        described.append(answer)
        if context.features.level(STREAMS_VERSION) < 1:
            answer.error_code = Errors.UNSUPPORTED_VERSION
            continue
        if not context.authorizer.allows(session, acl.DESCRIBE, acl.GROUP, group_id):
            answer.error_code = Errors.GROUP_AUTHORIZATION_FAILED
            continue
        group = groups.streams.groups.get(group_id)
        if group is None:
            answer.error_code = Errors.GROUP_ID_NOT_FOUND
            answer.error_message = (f"Group {group_id} is not a streams group." if groups.holds(group_id)
                                    else f"Group {group_id} not found.")
            continue
        answer.group_state, answer.group_epoch = group.state.value, group.group_epoch
        answer.assignment_epoch, answer.assignor_name = group.assignment_epoch, ASSIGNOR_NAME
        answer.topology = _topology(group, context.logs.topics)
        answer.members = [_member(m, group.target.get(m.member_id, ({}, {}))) for m in group.members.values()]
        if request.include_authorized_operations:
            answer.authorized_operations = context.authorizer.authorized_operations(session, acl.GROUP, group_id)
    return msg.RESPONSE(groups=described)
