"""DeleteGroups (key 42), v0-3; v2 flexible; v3 (Kafka 4.4) adds a message per group."""

from ._dsl import INT16, INT32, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "DeleteGroupsRequest", 42, "0-3", "2+",
    Field("groups_names", Array(STRING)),
)

Result = Struct(
    "DeletableGroupResult",
    Field("group_id", STRING),
    Field("error_code", INT16),
    Field("error_message", STRING, "3+", nullable="3+", default=None),
)

RESPONSE = Message(
    "DeleteGroupsResponse", 42, "0-3", "2+",
    Field("throttle_time_ms", INT32),
    Field("results", Array(Result)),
)
