"""LeaveGroup (key 13), v0-5; v3 batches members (with instance ids); v4 flexible; v5 reason."""

from ._dsl import INT16, INT32, STRING, Array, Field, Message, Struct

MemberIdentity = Struct(
    "MemberIdentity",
    Field("member_id", STRING, "3+"),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    Field("reason", STRING, "5+", nullable="5+", default=None),
)

REQUEST = Message(
    "LeaveGroupRequest", 13, "0-5", "4+",
    Field("group_id", STRING),
    Field("member_id", STRING, "0-2"),
    Field("members", Array(MemberIdentity), "3+"),
)

MemberResponse = Struct(
    "MemberResponse",
    Field("member_id", STRING, "3+"),
    Field("group_instance_id", STRING, "3+", nullable="3+"),
    Field("error_code", INT16, "3+"),
)

RESPONSE = Message(
    "LeaveGroupResponse", 13, "0-5", "4+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("members", Array(MemberResponse), "3+"),
)
