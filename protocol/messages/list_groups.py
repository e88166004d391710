"""ListGroups (key 16), v0-5; v3 flexible; v4 state filter; v5 type filter."""

from ._dsl import INT16, INT32, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "ListGroupsRequest", 16, "0-5", "3+",
    Field("states_filter", Array(STRING), "4+"),
    Field("types_filter", Array(STRING), "5+"),
)

ListedGroup = Struct(
    "ListedGroup",
    Field("group_id", STRING),
    Field("protocol_type", STRING),
    Field("group_state", STRING, "4+"),
    Field("group_type", STRING, "5+"),
)

RESPONSE = Message(
    "ListGroupsResponse", 16, "0-5", "3+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("groups", Array(ListedGroup)),
)
