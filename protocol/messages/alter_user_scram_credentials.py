"""AlterUserScramCredentials (key 51), v0; flexible. The client salts the password itself."""

from ._dsl import BYTES, INT8, INT16, INT32, STRING, Array, Field, Message, Struct

Deletion = Struct(
    "ScramCredentialDeletion",
    Field("name", STRING),
    Field("mechanism", INT8),
)

Upsertion = Struct(
    "ScramCredentialUpsertion",
    Field("name", STRING),
    Field("mechanism", INT8),
    Field("iterations", INT32),
    Field("salt", BYTES),
    Field("salted_password", BYTES),
)

REQUEST = Message(
    "AlterUserScramCredentialsRequest", 51, "0", "0+",
    Field("deletions", Array(Deletion)),
    Field("upsertions", Array(Upsertion)),
)

Result = Struct(
    "AlterUserScramCredentialsResult",
    Field("user", STRING),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

RESPONSE = Message(
    "AlterUserScramCredentialsResponse", 51, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("results", Array(Result)),
)
