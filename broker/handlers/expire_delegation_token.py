"""ExpireDelegationToken (40), v1-2: bring a token's expiry forward to now + the period (not past
its max timestamp); a negative period removes it at once, even an expired one. Only its owner or
a renewer (DELEGATION_TOKEN_OWNER_MISMATCH, checked before expiry here, as Kafka's controller
does); unknown HMAC DELEGATION_TOKEN_NOT_FOUND. Refusals as RenewDelegationToken's."""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors, KafkaError
from weir.protocol.messages import expire_delegation_token as msg

from ..dispatcher import handles
from ._token_requests import allowed, principal_of


@handles(ApiKey.EXPIRE_DELEGATION_TOKEN, versions=(1, 2))
def handle(context, header, request, session=None):
    if not allowed(session):
        return msg.RESPONSE(error_code=Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry_timestamp_ms=-1)
    try:
        expiry = context.delegation_tokens.expire(principal_of(session), bytes(request.hmac),
                                                  request.expiry_time_period_ms)
    except KafkaError as exc:
        return msg.RESPONSE(error_code=exc.error, expiry_timestamp_ms=0)
    return msg.RESPONSE(error_code=Errors.NONE, expiry_timestamp_ms=expiry)
