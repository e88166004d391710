"""SyncGroup (key 14), v0-5; v3 group instance id; v4 flexible; v5 protocol type and name."""

from ._dsl import BYTES, INT16, INT32, STRING, Array, Field, Message, Struct

Assignment = Struct(
    "SyncGroupRequestAssignment",
    Field("member_id", STRING),
    Field("assignment", BYTES),
)

REQUEST = Message(
    "SyncGroupRequest", 14, "0-5", "4+",
    Field("group_id", STRING),
    Field("generation_id", INT32),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    Field("protocol_type", STRING, "5+", nullable="5+", default=None),
    Field("protocol_name", STRING, "5+", nullable="5+", default=None),
    Field("assignments", Array(Assignment)),
)

RESPONSE = Message(
    "SyncGroupResponse", 14, "0-5", "4+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
    Field("protocol_type", STRING, "5+", nullable="5+", default=None),
    Field("protocol_name", STRING, "5+", nullable="5+", default=None),
    Field("assignment", BYTES),
)
