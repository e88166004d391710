"""ShareGroupHeartbeat (key 76), v1, flexible (KIP-932): a share group member's one group API.

v0 was an early-access version Kafka 4.1 removed; 4.4 serves v1 only. Joining is epoch 0 with a
member id the client made, leaving is epoch -1. Null fields mean "unchanged since the last heartbeat".
"""

from ._dsl import INT16, INT32, STRING, UUID, Array, Field, Message, Struct

REQUEST = Message(
    "ShareGroupHeartbeatRequest", 76, "1-1", "0+",
    Field("group_id", STRING),
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
)

TopicPartitions = Struct(
    "TopicPartitions",
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
)

Assignment = Struct(
    "Assignment",
    Field("topic_partitions", Array(TopicPartitions)),
)

RESPONSE = Message(
    "ShareGroupHeartbeatResponse", 76, "1-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+", default=None),
    Field("member_epoch", INT32),
    Field("heartbeat_interval_ms", INT32),
    Field("assignment", Assignment, nullable="0+", default=None),
)
