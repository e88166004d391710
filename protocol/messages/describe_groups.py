"""DescribeGroups (key 15), v0-6; v3 authorized operations; v4 instance ids; v5 flexible; v6 error message."""

from ._dsl import BOOL, BYTES, INT16, INT32, INT32_MIN, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "DescribeGroupsRequest", 15, "0-6", "5+",
    Field("groups", Array(STRING)),
    Field("include_authorized_operations", BOOL, "3+"),
)

Member = Struct(
    "DescribedGroupMember",
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "4+", nullable="4+", default=None),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("member_metadata", BYTES),
    Field("member_assignment", BYTES),
)

Group = Struct(
    "DescribedGroup",
    Field("error_code", INT16),
    Field("error_message", STRING, "6+", nullable="6+", default=None),
    Field("group_id", STRING),
    Field("group_state", STRING),
    Field("protocol_type", STRING),
    Field("protocol_data", STRING),
    Field("members", Array(Member)),
    Field("authorized_operations", INT32, "3+", default=INT32_MIN),
)

RESPONSE = Message(
    "DescribeGroupsResponse", 15, "0-6", "5+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("groups", Array(Group)),
)
