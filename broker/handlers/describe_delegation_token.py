"""DescribeDelegationToken (41), v1-3: the tokens the requester may see, with their HMACs. Null
owners: every token; an empty list: none (kafka-delegation-tokens --describe without an owner sends
one); else the tokens one of the owners owns, requested or renews. A requester sees the tokens it
owns, requested or renews (Kafka 4.4's TokenInformation.ownerOrRenewer), and others' tokens with DESCRIBE on the
DelegationToken resource (the token id) or DESCRIBE_TOKENS on the owner's User resource (KIP-373),
as KafkaApis.handleDescribeTokensRequest filters. Refusals: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
then DELEGATION_TOKEN_AUTH_DISABLED. Expired tokens not yet swept are listed, as in Kafka."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import describe_delegation_token as msg

from ..acl import model as acl
from ..dispatcher import handles
from ._token_requests import allowed, principal_of, split


@handles(ApiKey.DESCRIBE_DELEGATION_TOKEN, versions=(1, 3))
def handle(context, header, request, session=None):
    tokens = context.delegation_tokens
    if not allowed(session):
        return msg.RESPONSE(error_code=Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens=[])
    if not tokens.enabled:
        return msg.RESPONSE(error_code=Errors.DELEGATION_TOKEN_AUTH_DISABLED, tokens=[])
    if request.owners is not None and not request.owners:
        return msg.RESPONSE(error_code=Errors.NONE, tokens=[])
    requester = principal_of(session)
    owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
    authorizer = context.authorizer

    def visible(token) -> bool:
        if owners is not None and not any(token.owner_or_renewer(owner) for owner in owners):
            return False
        return (token.owner_or_renewer(requester)
                or authorizer.allows(session, acl.DESCRIBE, acl.DELEGATION_TOKEN, token.token_id)
                or authorizer.allows(session, acl.DESCRIBE_TOKENS, acl.USER, token.owner))

    return msg.RESPONSE(error_code=Errors.NONE, tokens=[_described(tokens, token)
                                                        for token in tokens.tokens() if visible(token)])


def _described(tokens, token):
    owner_type, owner_name = split(token.owner)
    requester_type, requester_name = split(token.requester)
    return msg.Token(principal_type=owner_type, principal_name=owner_name,
                     token_requester_principal_type=requester_type, token_requester_principal_name=requester_name,
                     issue_timestamp=token.issue_ms, expiry_timestamp=token.expiry_ms, max_timestamp=token.max_ms,
                     token_id=token.token_id, hmac=tokens.hmac(token.token_id),
                     renewers=[msg.Renewer(principal_type=kind, principal_name=name)
                               for kind, name in map(split, token.renewers)])
