"""RenewDelegationToken (39), v1-2: push a token's expiry out by the period asked for, at most
delegation.token.expiry.time.ms and never past its max timestamp. Only its owner or a renewer
(DELEGATION_TOKEN_OWNER_MISMATCH); an unknown HMAC is DELEGATION_TOKEN_NOT_FOUND, an expired token
DELEGATION_TOKEN_EXPIRED (checked before the owner, as Kafka's controller does). A connection
that may not ask for tokens gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED with expiry -1; the
controller's refusals carry 0."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import renew_delegation_token as msg

from ..dispatcher import handles
from ._token_requests import allowed, principal_of


@handles(ApiKey.RENEW_DELEGATION_TOKEN, versions=(1, 2))
def handle(context, header, request, session=None):
    if not allowed(session):
        return msg.RESPONSE(error_code=Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=-1)
    try:
        expiry = context.delegation_tokens.renew(principal_of(session), bytes(request.hmac), request.renew_period_ms)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.error, expiry_timestamp_ms=0)
    return msg.RESPONSE(error_code=Errors.NONE, expiry_timestamp_ms=expiry)
