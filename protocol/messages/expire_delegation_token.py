"""ExpireDelegationToken (key 40), v1-2 (Kafka 4 removed v0); flexible from v2. A negative
period expires the token at once."""

from ._dsl import BYTES, INT16, INT32, INT64, Field, Message

REQUEST = Message(
    "ExpireDelegationTokenRequest", 40, "1-2", "2+",
    Field("hmac", BYTES),
    Field("expiry_time_period_ms", INT64),
)

RESPONSE = Message(
    "ExpireDelegationTokenResponse", 40, "1-2", "2+",
    Field("error_code", INT16),
    Field("expiry_timestamp_ms", INT64, default=-1),
    Field("throttle_time_ms", INT32),
)
