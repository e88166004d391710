"""DeleteGroups (key 42), v0-2; v2 flexible."""

from ._dsl import INT16, INT32, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "DeleteGroupsRequest", 42, "0-2", "2+",
    Field("groups_names", Array(STRING)),
)

Result = Struct(
    "DeletableGroupResult",
    Field("group_id", STRING),
    Field("error_code", INT16),
)

RESPONSE = Message(
    "DeleteGroupsResponse", 42, "0-2", "2+",
    Field("throttle_time_ms", INT32),
    Field("results", Array(Result)),
)
