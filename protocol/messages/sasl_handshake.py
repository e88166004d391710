"""SaslHandshake (key 17), v0-1; not flexible. v0 is followed by raw SASL tokens, v1 by SaslAuthenticate."""

from ._dsl import INT16, STRING, Array, Field, Message

REQUEST = Message(
    "SaslHandshakeRequest", 17, "0-1", None,
    Field("mechanism", STRING),
)

RESPONSE = Message(
    "SaslHandshakeResponse", 17, "0-1", None,
    Field("error_code", INT16),
    Field("mechanisms", Array(STRING)),
)
