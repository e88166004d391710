"""DescribeUserScramCredentials (key 50), v0; flexible. Null or empty users: every user."""

from ._dsl import INT8, INT16, INT32, STRING, Array, Field, Message, Struct

UserName = Struct("UserName", Field("name", STRING))

REQUEST = Message(
    "DescribeUserScramCredentialsRequest", 50, "0", "0+",
    Field("users", Array(UserName), nullable="0+", default=None),
)

CredentialInfo = Struct(
    "CredentialInfo",
    Field("mechanism", INT8),
    Field("iterations", INT32),
)

Result = Struct(
    "DescribeUserScramCredentialsResult",
    Field("user", STRING),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("credential_infos", Array(CredentialInfo)),
)

RESPONSE = Message(
    "DescribeUserScramCredentialsResponse", 50, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("results", Array(Result)),
)
