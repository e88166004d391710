"""DescribeClientQuotas (48), v0-1.

The entities whose quotas a filter matches, with their values, as Kafka's ClientQuotasImage
describes them (broker/quota/store.py): components match a type exactly (0), its default (1)
or any entity that has the type (2); ``strict`` asks for entities with no other types. A
malformed filter is INVALID_REQUEST (an unknown entity type UNSUPPORTED_VERSION) with no
entries. ``kafka-configs --describe --entity-type users/clients`` and ``kafka-client-quotas``
ask this. A match type other than 0, 1 or 2 is INVALID_REQUEST, as Kafka's
ClientQuotaFilterComponent parsing refuses it.
ACLs: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_client_quotas as msg

from ..acl import model as acl
from ..dispatcher import handles
from ..quota.store import InvalidQuotaRequest

_MATCH_TYPES = (0, 1, 2)


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, versions=(0, 1))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.DESCRIBE_CONFIGS):  # ACLs
        return msg.RESPONSE(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.", entries=None)
    for component in request.components:
        if component.match_type not in _MATCH_TYPES:
            return msg.RESPONSE(error_code=Errors.INVALID_REQUEST,
                                error_message=f"Unexpected match type {component.match_type}")
    try:
        matched = context.quotas.store.describe(
            [(c.entity_type, c.match_type, c.match) for c in request.components], request.strict)
    except InvalidQuotaRequest as exc:
        return msg.RESPONSE(error_code=exc.code, error_message=exc.message, entries=None)
    return msg.RESPONSE(error_code=Errors.NONE, error_message="", entries=[
        msg.EntryData(entity=[msg.EntityData(entity_type=kind, entity_name=name) for kind, name in entity],
                      values=[msg.ValueData(key=key, value=value) for key, value in sorted(values.items())])
        for entity, values in matched])
