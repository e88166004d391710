"""SaslHandshake (17), v0-1, once a connection may send any request.

Before authentication on a SASL listener the connection's authenticator answers it
(broker/security/authenticator.py). Arriving here it is out of place, on a listener
without SASL or on a connection already authenticated: ILLEGAL_SASL_STATE with no
mechanisms, as Kafka's KafkaApis answers it. Kafka keeps serving v0 (deprecated).
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import sasl_handshake as msg

from ..dispatcher import handles


@handles(ApiKey.SASL_HANDSHAKE, versions=(0, 1))
def handle(context, header, request):
    return msg.RESPONSE(error_code=Errors.ILLEGAL_SASL_STATE, mechanisms=[])
