"""ShareGroupDescribe (key 77), v1, flexible (KIP-932): share groups, their members and assignments."""

from ._dsl import BOOL, INT16, INT32, INT32_MIN, STRING, UUID, Array, Field, Message, Struct

REQUEST = Message(
    "ShareGroupDescribeRequest", 77, "1-1", "0+",
    Field("group_ids", Array(STRING)),
    Field("include_authorized_operations", BOOL),
)

TopicPartitions = Struct(
    "TopicPartitions",
    Field("topic_id", UUID),
    Field("topic_name", STRING),
    Field("partitions", Array(INT32)),
)

Assignment = Struct("Assignment", Field("topic_partitions", Array(TopicPartitions)))

Member = Struct(
    "Member",
    Field("member_id", STRING),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("member_epoch", INT32),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("subscribed_topic_names", Array(STRING)),
    Field("assignment", Assignment),
)

DescribedGroup = Struct(
    "DescribedGroup",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("group_id", STRING),
    Field("group_state", STRING),
    Field("group_epoch", INT32),
    Field("assignment_epoch", INT32),
    Field("assignor_name", STRING),
    Field("members", Array(Member)),
    Field("authorized_operations", INT32, default=INT32_MIN),
)

RESPONSE = Message(
    "ShareGroupDescribeResponse", 77, "1-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("groups", Array(DescribedGroup)),
)
