"""RenewDelegationToken (key 39), v1-2 (Kafka 4 removed v0); flexible from v2."""

from ._dsl import BYTES, INT16, INT32, INT64, Field, Message

REQUEST = Message(
    "RenewDelegationTokenRequest", 39, "1-2", "2+",
    Field("hmac", BYTES),
    Field("renew_period_ms", INT64),
)

RESPONSE = Message(
    "RenewDelegationTokenResponse", 39, "1-2", "2+",
    Field("error_code", INT16),
    Field("expiry_timestamp_ms", INT64, default=-1),
    Field("throttle_time_ms", INT32),
)
