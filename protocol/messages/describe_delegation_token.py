"""DescribeDelegationToken (key 41), v1-3 (Kafka 4 removed v0); flexible from v2. Null owners:
every token the requester may see; an empty list: none. v3 (KIP-373) adds who asked for each."""

from ._dsl import BYTES, INT16, INT32, INT64, STRING, Array, Field, Message, Struct

Owner = Struct(
    "DescribeDelegationTokenOwner",
    Field("principal_type", STRING),
    Field("principal_name", STRING),
)

REQUEST = Message(
    "DescribeDelegationTokenRequest", 41, "1-3", "2+",
    Field("owners", Array(Owner), nullable="0+", default=None),
)

Renewer = Struct(
    "DescribedDelegationTokenRenewer",
    Field("principal_type", STRING),
    Field("principal_name", STRING),
)

Token = Struct(
    "DescribedDelegationToken",
    Field("principal_type", STRING),
    Field("principal_name", STRING),
    Field("token_requester_principal_type", STRING, "3+", default=""),
    Field("token_requester_principal_name", STRING, "3+", default=""),
    Field("issue_timestamp", INT64),
    Field("expiry_timestamp", INT64),
    Field("max_timestamp", INT64),
    Field("token_id", STRING),
    Field("hmac", BYTES),
    Field("renewers", Array(Renewer)),
)

RESPONSE = Message(
    "DescribeDelegationTokenResponse", 41, "1-3", "2+",
    Field("error_code", INT16),
    Field("tokens", Array(Token)),
    Field("throttle_time_ms", INT32),
)
