"""CreateDelegationToken (38), v1-3: a token for the requester or, from v3 (KIP-373), for another
owner. Checks in KafkaApis' order: token requests allowed on this connection (else
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), CREATE_TOKENS on the owner's User resource when the owner
is someone else (DELEGATION_TOKEN_AUTHORIZATION_FAILED), renewers of type User only
(INVALID_PRINCIPAL_TYPE); then the controller's rules (broker/security/delegation_tokens.py):
tokens enabled (DELEGATION_TOKEN_AUTH_DISABLED), lifetime capped by delegation.token.max.lifetime.ms.
Refusals before the controller carry -1 timestamps, the controller's own carry 0, as in Kafka.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import create_delegation_token as msg

from ..acl import model as acl
from ..dispatcher import handles
from ._token_requests import allowed, principal_of, split


@handles(ApiKey.CREATE_DELEGATION_TOKEN, versions=(1, 3))
def handle(context, header, request, session=None):
    requester = principal_of(session)
    owner = requester
    if header.api_version >= 3 and request.owner_principal_name:
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"
    owner_type, owner_name = split(owner)
    requester_type, requester_name = split(requester)

    def refused(error: Errors, timestamp: int = -1):
        return msg.RESPONSE(error_code=error, principal_type=owner_type, principal_name=owner_name,
                            token_requester_principal_type=requester_type,
                            token_requester_principal_name=requester_name, issue_timestamp_ms=timestamp,
                            expiry_timestamp_ms=timestamp, max_timestamp_ms=timestamp)

    if not allowed(session):
        return refused(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if owner != requester and not context.authorizer.allows(session, acl.CREATE_TOKENS, acl.USER, owner):
        return refused(Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    if any(renewer.principal_type != "User" for renewer in request.renewers):
        return refused(Errors.INVALID_PRINCIPAL_TYPE)
    tokens = context.delegation_tokens
    try:
        token = tokens.create(owner, requester, [f"{r.principal_type}:{r.principal_name}" for r in request.renewers],
                              request.max_lifetime_ms)
    except KafkaError as exc:
        return refused(exc.error, 0)
    return msg.RESPONSE(error_code=Errors.NONE, principal_type=owner_type, principal_name=owner_name,
                        token_requester_principal_type=requester_type, token_requester_principal_name=requester_name,
                        issue_timestamp_ms=token.issue_ms, expiry_timestamp_ms=token.expiry_ms,
                        max_timestamp_ms=token.max_ms, token_id=token.token_id, hmac=tokens.hmac(token.token_id))
