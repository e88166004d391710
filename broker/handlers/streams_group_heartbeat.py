"""StreamsGroupHeartbeat (88), v0-1: a Kafka Streams member (``group.protocol=streams``, KIP-1071)
joins with its topology (epoch 0), heartbeats with its epoch and owned tasks, and leaves (-1; -2 for
a static member coming back); the broker assigns tasks (``broker/group/streams``).

With ``streams.version`` below 1 the API answers UNSUPPORTED_VERSION, as Kafka's does when streams
groups are not enabled. ACLs: READ on the group; with a topology, DESCRIBE on every topic it names
(TOPIC_AUTHORIZATION_FAILED). A group id held by a classic, consumer or share group answers
GROUP_ID_NOT_FOUND ("Group g is not a streams group."). The topology description push (key 93)
is never asked for: answers say topology_description_required false, so members never send it.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import streams_group_heartbeat as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..features import STREAMS_VERSION
from ..group.streams.topology import MISSING_CLIENT_TAGS

INT32_MAX = 2**31 - 1


def _task_ids(tasks):
    return [msg.TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in sorted(tasks.items())]


def _topic_names(topology) -> list[str]:
    names = []
    for sub in topology.subtopologies or ():
        names += list(sub.source_topics or ()) + list(sub.repartition_sink_topics or ())
        names += [t.name for t in [*(sub.repartition_source_topics or ()), *(sub.state_changelog_topics or ())]]
    return names


@handles(ApiKey.STREAMS_GROUP_HEARTBEAT, versions=(0, 1))
async def handle(context, header, request, client_host="", session=None):
    def refused(code, message=None):
        return msg.RESPONSE(error_code=code, error_message=message, member_id=request.member_id)
    if context.features.level(STREAMS_VERSION) < 1:
        return refused(Errors.UNSUPPORTED_VERSION, "The streams group protocol is not enabled.")
    authorizer = context.authorizer
    if not authorizer.allows(session, acl.READ, acl.GROUP, request.group_id):
        return refused(Errors.GROUP_AUTHORIZATION_FAILED)
    if request.topology is not None and authorizer.denied(session, acl.DESCRIBE, acl.TOPIC,
                                                          _topic_names(request.topology)):
        return refused(Errors.TOPIC_AUTHORIZATION_FAILED)
    answer = await context.groups.streams_group_heartbeat(request, header.client_id or "", client_host)
    tasks = answer.pop("tasks", None)
    endpoints = answer.pop("endpoints", None)
    status = answer.pop("status", [])
    if header.api_version < 1:  # v0 knows no MISSING_CLIENT_TAGS status: Kafka adds it from v1 on
        status = [(code, detail) for code, detail in status if code != MISSING_CLIENT_TAGS]
    lag = answer.pop("acceptable_recovery_lag", 10000)
    response = msg.RESPONSE(**answer)
    response.acceptable_recovery_lag = lag
    response.acceptable_recovery_lag_legacy = min(lag, INT32_MAX)
    response.status = [msg.Status(status_code=code, status_detail=detail) for code, detail in status]
    # null: unchanged since the last answer (the schema's default for an array is empty, not null)
    response.active_tasks = response.standby_tasks = response.warmup_tasks = None
    response.partitions_by_user_endpoint = None
    if tasks is not None:
        response.active_tasks, response.standby_tasks, response.warmup_tasks = (_task_ids(t) for t in tasks)
    if endpoints is not None:
        response.partitions_by_user_endpoint = [
            msg.EndpointToPartitions(
                user_endpoint=msg.Endpoint(host=host, port=port),
                active_partitions=[msg.TopicPartitions(topic=t, partitions=sorted(p)) for t, p in sorted(a.items())],
                standby_partitions=[msg.TopicPartitions(topic=t, partitions=sorted(p)) for t, p in sorted(s.items())])
            for (host, port), a, s in endpoints]
    return response
