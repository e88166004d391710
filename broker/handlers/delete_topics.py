"""DeleteTopics (20), v1-4 (by name; topic ids arrive in v6, which is not served).

UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist,
TOPIC_DELETION_DISABLED when ``delete.topic.enable`` is false, and
INVALID_REQUEST for the internal topics, which only the broker owns.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import delete_topics as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..quota.throttling import ControllerMutations
from ..log.manager import INTERNAL_TOPICS


@handles(ApiKey.DELETE_TOPICS, versions=(1, 4))
async def handle(context, header, request, session=None):
    results = []
    mutations = ControllerMutations(context, header, session, strict_since=5)  # controller_mutation_rate
    denied = context.authorizer.denied(session, acl.DELETE, acl.TOPIC, request.topic_names)  # ACLs
    for name in request.topic_names:
        result = msg.TopicResult(name=name)
        try:
            if name in denied:
                raise KafkaError(Errors.TOPIC_AUTHORIZATION_FAILED)
            if not context.config["delete.topic.enable"]:
                raise KafkaError(Errors.TOPIC_DELETION_DISABLED)
            if name in INTERNAL_TOPICS:
                raise KafkaError(Errors.INVALID_REQUEST, "internal topics cannot be deleted")
            topic = context.logs.topics.get(name)
            if topic is not None:
                mutations.take(len(topic.partitions))
            await context.logs.delete_topic(name)
        except KafkaError as exc:
            result.error_code = exc.code
        results.append(result)
    return msg.RESPONSE(responses=results, throttle_time_ms=mutations.throttle_ms())
