"""ConsumerGroupHeartbeat (key 68), v0-1, flexible (KIP-848): the consumer protocol's one group API.

v1 adds SubscribedTopicRegex and lets the consumer pick its own member id (KIP-1082).
Null fields in a request mean "unchanged since the last heartbeat".
"""

from ._dsl import INT16, INT32, STRING, UUID, Array, Field, Message, Struct

TopicPartitions = Struct(
    "TopicPartitions",
    Field("topic_id", UUID),
    Field("partitions", Array(INT32)),
)

REQUEST = Message(
    "ConsumerGroupHeartbeatRequest", 68, "0-1", "0+",
    Field("group_id", STRING),
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("instance_id", STRING, nullable="0+", default=None),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
    Field("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
    Field("server_assignor", STRING, nullable="0+", default=None),
    Field("topic_partitions", Array(TopicPartitions), nullable="0+", default=None),
)

Assignment = Struct(
    "Assignment",
    Field("topic_partitions", Array(TopicPartitions)),
)

RESPONSE = Message(
    "ConsumerGroupHeartbeatResponse", 68, "0-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("member_id", STRING, nullable="0+", default=None),
    Field("member_epoch", INT32),
    Field("heartbeat_interval_ms", INT32),
    Field("assignment", Assignment, nullable="0+", default=None),
)
