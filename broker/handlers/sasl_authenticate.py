"""SaslAuthenticate (36), v0-2, once a connection may send any request.

The SASL exchange itself is the connection's authenticator's (broker/security/authenticator.py).
Arriving here it is out of place (no SASL on this listener, or already authenticated):
ILLEGAL_SASL_STATE with Kafka's message. Deviation: re-authentication (KIP-368,
``connections.max.reauth.ms``) is not served, so a SaslHandshake/SaslAuthenticate after
authentication never starts a new session.
"""

from weir.protocol.api_keys import ApiKey
from weir.protocol.errors import Errors
from weir.protocol.messages import sasl_authenticate as msg

from ..dispatcher import handles


@handles(ApiKey.SASL_AUTHENTICATE, versions=(0, 2))
def handle(context, header, request):
    return msg.RESPONSE(error_code=Errors.ILLEGAL_SASL_STATE,
                        error_message="SaslAuthenticate request received after successful authentication")
