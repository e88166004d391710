"""JoinGroup (key 11), v0-5. v1 rebalance timeout; v4 MEMBER_ID_REQUIRED; v5
group instance ids (static membership). v6+ (flexible, v7 protocol type in
the response, v8 reason, v9 skip assignment) are declared for the codec only."""

from ._dsl import BOOL, BYTES, INT16, INT32, STRING, Array, Field, Message, Struct

Protocol = Struct(
    "JoinGroupRequestProtocol",
    Field("name", STRING),
    Field("metadata", BYTES),
)

REQUEST = Message(
    "JoinGroupRequest", 11, "0-9", "6+",
    Field("group_id", STRING),
    Field("session_timeout_ms", INT32),
    Field("rebalance_timeout_ms", INT32, "1+", default=-1),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "5+", nullable="5+", default=None),
    Field("protocol_type", STRING),
    Field("protocols", Array(Protocol)),
    Field("reason", STRING, "8+", nullable="8+", default=None),
)

Member = Struct(
    "JoinGroupResponseMember",
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "5+", nullable="5+", default=None),
    Field("metadata", BYTES),
)

RESPONSE = Message(
    "JoinGroupResponse", 11, "0-9", "6+",
    Field("throttle_time_ms", INT32, "2+"),
    Field("error_code", INT16),
    Field("generation_id", INT32, default=-1),
    Field("protocol_type", STRING, "7+", nullable="7+", default=None),
    Field("protocol_name", STRING, nullable="7+"),
    Field("leader", STRING),
    Field("skip_assignment", BOOL, "9+", default=False),
    Field("member_id", STRING),
    Field("members", Array(Member)),
)
