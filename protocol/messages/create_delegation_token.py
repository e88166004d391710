"""CreateDelegationToken (key 38), v1-3 (Kafka 4 removed v0); flexible from v2. v3 (KIP-373)
lets the requester name another owner and answers who asked."""

from ._dsl import BYTES, INT16, INT32, INT64, STRING, Array, Field, Message, Struct

Renewer = Struct(
    "CreatableRenewers",
    Field("principal_type", STRING),
    Field("principal_name", STRING),
)

REQUEST = Message(
    "CreateDelegationTokenRequest", 38, "1-3", "2+",
    Field("owner_principal_type", STRING, "3+", nullable="3+", default=None),
    Field("owner_principal_name", STRING, "3+", nullable="3+", default=None),
    Field("renewers", Array(Renewer)),
    Field("max_lifetime_ms", INT64, default=-1),
)

RESPONSE = Message(
    "CreateDelegationTokenResponse", 38, "1-3", "2+",
    Field("error_code", INT16),
    Field("principal_type", STRING),
    Field("principal_name", STRING),
    Field("token_requester_principal_type", STRING, "3+", default=""),
    Field("token_requester_principal_name", STRING, "3+", default=""),
    Field("issue_timestamp_ms", INT64, default=-1),
    Field("expiry_timestamp_ms", INT64, default=-1),
    Field("max_timestamp_ms", INT64, default=-1),
    Field("token_id", STRING, default=""),
    Field("hmac", BYTES, default=b""),
    Field("throttle_time_ms", INT32),
)
