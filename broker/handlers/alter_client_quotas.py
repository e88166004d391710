"""AlterClientQuotas (49), v0-1.

Sets or removes quota values per entity (user, client-id, their defaults and combinations, or
ip) with Kafka's controller checks, messages and order (broker/quota/store.py): an unknown
entity type, key or combination, a value not above 0, a fractional byte rate, a key or entity
named twice are INVALID_REQUEST for that entry; the other entries go on. ``validate_only``
checks without keeping. Kept durably before it is answered; the quota manager uses the new
values from the next request on. ``connection_creation_rate`` (ip entities) is kept and
described but not enforced: Weir has no per-IP connection-rate limiter.
ACLs: ALTER_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every entry.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import alter_client_quotas as msg

from ..acl import model as acl
from ..dispatcher import handles


def _entity(entry):
    return [msg.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity]


@handles(ApiKey.ALTER_CLIENT_QUOTAS, versions=(0, 1))
def handle(context, header, request, session=None):
    if not context.authorizer.allows_cluster(session, acl.ALTER_CONFIGS):
        return msg.RESPONSE(entries=[msg.EntryResult(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED,
                                                     error_message="Cluster authorization failed.",
                                                     entity=_entity(entry)) for entry in request.entries])
    outcomes = context.quotas.store.alter(
        [([(e.entity_type, e.entity_name) for e in entry.entity], [(op.key, op.value, op.remove) for op in entry.ops])
         for entry in request.entries], request.validate_only)
    return msg.RESPONSE(entries=[msg.EntryResult(error_code=code, error_message=message, entity=_entity(entry))
                                 for entry, (code, message) in zip(request.entries, outcomes, strict=True)])
