"""SaslAuthenticate (key 36), v0-2; flexible from v2. v1 adds the session lifetime."""

from ._dsl import BYTES, INT16, INT64, STRING, Field, Message

REQUEST = Message(
    "SaslAuthenticateRequest", 36, "0-2", "2+",
    Field("auth_bytes", BYTES),
)

RESPONSE = Message(
    "SaslAuthenticateResponse", 36, "0-2", "2+",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("auth_bytes", BYTES, default=b""),
    Field("session_lifetime_ms", INT64, versions="1+", default=0),
)
