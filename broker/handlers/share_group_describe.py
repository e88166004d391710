"""ShareGroupDescribe (77), v1: a share group's state, epochs, assignor and members, each with its
epoch, client, subscription and assignment (topic ids and names).

An unknown id answers GROUP_ID_NOT_FOUND ("Group g not found."), a classic or consumer group's
id GROUP_ID_NOT_FOUND ("Group g is not a share group."), as Kafka 4.4 answers. ACLs: DESCRIBE on
the group; the authorized operations only when asked for (INT32_MIN otherwise).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import share_group_describe as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..features import SHARE_VERSION
from ..group.share.assignor import NAME as ASSIGNOR_NAME


@handles(ApiKey.SHARE_GROUP_DESCRIBE, versions=(1, 1))
def handle(context, header, request, session=None):
    groups = context.groups
    names = {topic.topic_id: name for name, topic in context.logs.topics.items()}
    described = []
    for group_id in request.group_ids:
        answer = msg.DescribedGroup(error_code=Errors.NONE, group_id=group_id, group_state="", group_epoch=0,
                                    assignment_epoch=0, assignor_name="", members=[])
        described.append(answer)
        if context.features.level(SHARE_VERSION) < 1:
            answer.error_code = Errors.UNSUPPORTED_VERSION
            continue
        if not context.authorizer.allows(session, acl.DESCRIBE, acl.GROUP, group_id):
            answer.error_code = Errors.GROUP_AUTHORIZATION_FAILED
            continue
        group = groups.share.groups.get(group_id)
        if group is None:
            other = group_id in groups.consumer.groups or group_id in groups.groups
            answer.error_code = Errors.GROUP_ID_NOT_FOUND
            answer.error_message = (f"Group {group_id} is not a share group." if other
                                    else f"Group {group_id} not found.")
            continue
        answer.group_state, answer.group_epoch = group.state.value, group.group_epoch
        answer.assignment_epoch, answer.assignor_name = group.assignment_epoch, ASSIGNOR_NAME
        answer.members = [msg.Member(
            member_id=member.member_id, rack_id=member.metadata.rack_id, member_epoch=member.member_epoch,
            client_id=member.metadata.client_id, client_host=member.metadata.client_host,
            subscribed_topic_names=list(member.metadata.subscribed_topic_names),
            assignment=msg.Assignment(topic_partitions=[
                msg.TopicPartitions(topic_id=topic_id, topic_name=names.get(topic_id, ""), partitions=list(indexes))
                for topic_id, indexes in member.assignment.items()]))
            for member in group.members.values()]
        if request.include_authorized_operations:
            answer.authorized_operations = context.authorizer.authorized_operations(session, acl.GROUP, group_id)
    return msg.RESPONSE(groups=described)
