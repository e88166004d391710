"""Heartbeat (key 12), v0-4; v3 group instance id; v4 flexible."""

from ._dsl import INT16, INT32, STRING, Field, Message

REQUEST = Message(
    "HeartbeatRequest", 12, "0-4", "4+",
    Field("group_id", STRING),
    Field("generation_id", INT32),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
)

RESPONSE = Message(
    "HeartbeatResponse", 12, "0-4", "4+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16),
)
