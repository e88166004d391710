"""ConsumerGroupDescribe (69), v0-1: a consumer-protocol group's epochs, assignor and members, each
with its member epoch, subscription, current assignment and target assignment (v1: member type,
always 1, consumer: classic members do not join consumer groups on Weir).

A group that is not a consumer group answers GROUP_ID_NOT_FOUND ("Group X is not a consumer
group."), which the Java Admin takes as its cue to describe the group with DescribeGroups, as
against Kafka; an empty id INVALID_GROUP_ID. Authorized operations: every group operation.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import consumer_group_describe as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..group.consumer.coordinator import topic_names
from ..group.consumer.heartbeat import preferred_assignor
from ..group.consumer.subscription import TopicsView

CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE = 0, 1  # KIP-1099; classic: a member that joined by JoinGroup


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, versions=(0, 1))
def handle(context, header, request, session=None):
    consumer = context.groups.consumer
    topics = TopicsView.of(context.logs)
    described = []
    for group_id in request.group_ids:
        group = consumer.groups.get(group_id)
        if not context.authorizer.allows(session, acl.DESCRIBE, acl.GROUP, group_id):  # ACLs
            described.append(msg.DescribedGroup(error_code=Errors.GROUP_AUTHORIZATION_FAILED, group_id=group_id))
            continue
        if not group_id:
            described.append(msg.DescribedGroup(error_code=Errors.INVALID_GROUP_ID, group_id=group_id,
                                                error_message="Group ID can't be empty."))
            continue
        if group is None:
            message = (f"Group {group_id} is not a consumer group." if group_id in context.groups.groups
                       else f"Group {group_id} not found.")
            described.append(msg.DescribedGroup(error_code=Errors.GROUP_ID_NOT_FOUND, group_id=group_id,
                                                error_message=message))
            continue
        members = [msg.Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_assignment(m.assigned, topics), target_assignment=_assignment(group.target.get(m.member_id, {}),
                                                                                      topics),
            member_type=CLASSIC_MEMBER_TYPE if m.uses_classic_protocol else CONSUMER_MEMBER_TYPE)
            for m in group.members.values()]
        answer = msg.DescribedGroup(
            error_code=Errors.NONE, group_id=group_id, group_state=group.state.value, group_epoch=group.group_epoch,
            assignment_epoch=group.target_epoch,
            assignor_name=preferred_assignor(group.members.values(), consumer.settings), members=members)
        if request.include_authorized_operations:
            answer.authorized_operations = context.authorizer.authorized_operations(session, acl.GROUP, group_id)
        described.append(answer)
    return msg.RESPONSE(groups=described)


def _assignment(assignment, topics):
    return msg.Assignment(topic_partitions=[msg.TopicPartitions(topic_id=topic_id, topic_name=name, partitions=parts)
                                            for topic_id, name, parts in topic_names(assignment, topics)])
