"""Checks that several handlers share, written once (the rest are one-line calls to the
authorizer in the handlers, where Kafka's KafkaApis makes them)."""

from __future__ import annotations

from weir.protocol.errors import Errors, KafkaError

from .model import ALTER, CLUSTER, CLUSTER_ACTION, CLUSTER_NAME, CREATE, GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE

_TRANSACTIONAL_BIT = 0x10  # RecordBatch attributes (offset 21, int16): bit 4
_NOTHING: dict[str, Errors] = {}


def produce_refusals(context, session, request) -> dict[str, Errors]:
    """Topic -> error for the Produce request's refused topics (KafkaApis.handleProduceRequest):
    transactional batches need WRITE on the TransactionalId (else every partition is
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED), each topic needs WRITE (TOPIC_AUTHORIZATION_FAILED).
    Idempotent batches need nothing more in Kafka 4 (InitProducerId checked the producer).
    Weir creates a topic a Produce names (a deviation: Kafka does not); with the authorizer on
    that needs CREATE on the cluster or the topic, as Metadata's auto-creation does, and a
    topic the principal may not create is UNKNOWN_TOPIC_OR_PARTITION, Kafka's answer."""
    authorizer = context.authorizer
    if not authorizer.enabled or session is None:
        return _NOTHING
    names = [t.name for t in request.topic_data]
    if _has_transactional_batch(request) and (
            request.transactional_id is None
            or not authorizer.allows(session, WRITE, TRANSACTIONAL_ID, request.transactional_id)):
        return dict.fromkeys(names, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    refused = dict.fromkeys(authorizer.denied(session, WRITE, TOPIC, names), Errors.TOPIC_AUTHORIZATION_FAILED)
    missing = [name for name in names if name not in refused and name not in context.logs.topics]
    if missing and not authorizer.allows_cluster(session, CREATE, audit_denial=False):
        refused.update(dict.fromkeys(authorizer.denied(session, CREATE, TOPIC, missing),
                                     Errors.UNKNOWN_TOPIC_OR_PARTITION))
    return refused


def _has_transactional_batch(request) -> bool:
    for topic in request.topic_data:
        for partition in topic.partition_data:
            records = partition.records
            if records is not None and len(records) > 22 and records[22] & _TRANSACTIONAL_BIT:
                return True
    return False


def fetch_refusals(authorizer, session, request) -> list:
    """Take the refused topics out of a Fetch request and answer them TOPIC_AUTHORIZATION_FAILED
    (KafkaApis.handleFetchRequest): a follower (replica_id >= 0) needs CLUSTER_ACTION, a consumer
    READ on each topic."""
    if not authorizer.enabled or session is None:
        return []
    from weir.protocol.messages import fetch as msg

    if request.replica_id >= 0:
        denied = set() if authorizer.allows_cluster(session, CLUSTER_ACTION) else {t.topic for t in request.topics}
    else:
        denied = authorizer.denied(session, READ, TOPIC, [t.topic for t in request.topics])
    if not denied:
        return []
    refused = [t for t in request.topics if t.topic in denied]
    request.topics = [t for t in request.topics if t.topic not in denied]
    return [msg.TopicResponse(topic=t.topic, partitions=[
        msg.PartitionData(partition_index=p.partition, error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                          high_watermark=-1, records=b"", aborted_transactions=None)
        for p in t.partitions]) for t in refused]


#: ConfigResource types -> (ACL resource type, the error Kafka's ConfigHelper answers)
_CONFIG_RESOURCES = {2: (TOPIC, Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
                     4: (CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
                     8: (CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
                     16: (CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),  # KIP-714
                     32: (GROUP, Errors.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")}


def check_config_access(authorizer, session, config_type: int, name: str, operation: int) -> None:
    """Raise the authorization error Kafka answers for a config resource the principal may not
    DESCRIBE_CONFIGS / ALTER_CONFIGS (broker resources are checked on the cluster)."""
    if not authorizer.enabled or session is None or config_type not in _CONFIG_RESOURCES:
        return
    resource_type, code, message = _CONFIG_RESOURCES[config_type]
    if not authorizer.allows(session, operation, resource_type, CLUSTER_NAME if resource_type == CLUSTER else name):
        raise KafkaError(code, message)


def acl_change_refusal(authorizer, session) -> tuple[int, str] | None:
    """What CreateAcls and DeleteAcls answer every entry when they may not act (KafkaApis / the
    controller's AclControlManager): ALTER on the cluster first, then an authorizer at all."""
    if not authorizer.allows_cluster(session, ALTER):
        return Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    if not authorizer.enabled:
        return Errors.SECURITY_DISABLED, "No Authorizer is configured."
    return None
