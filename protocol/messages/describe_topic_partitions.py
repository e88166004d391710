"""DescribeTopicPartitions (key 75, KIP-966), v0; flexible. Paged by partition count with a cursor."""

from ._dsl import BOOL, INT16, INT32, INT32_MIN, STRING, UUID, Array, Field, Message, Struct

TopicRequest = Struct(
    "TopicRequest",
    Field("name", STRING),
)

Cursor = Struct(
    "Cursor",
    Field("topic_name", STRING),
    Field("partition_index", INT32),
)

REQUEST = Message(
    "DescribeTopicPartitionsRequest", 75, "0", "0+",
    Field("topics", Array(TopicRequest)),
    Field("response_partition_limit", INT32, default=2000),
    Field("cursor", Cursor, nullable="0+", default=None),
)

Partition = Struct(
    "DescribeTopicPartitionsResponsePartition",
    Field("error_code", INT16),
    Field("partition_index", INT32),
    Field("leader_id", INT32),
    Field("leader_epoch", INT32, default=-1),
    Field("replica_nodes", Array(INT32)),
    Field("isr_nodes", Array(INT32)),
    Field("eligible_leader_replicas", Array(INT32), nullable="0+"),
    Field("last_known_elr", Array(INT32), nullable="0+"),
    Field("offline_replicas", Array(INT32)),
)

Topic = Struct(
    "DescribeTopicPartitionsResponseTopic",
    Field("error_code", INT16),
    Field("name", STRING, nullable="0+"),
    Field("topic_id", UUID),
    Field("is_internal", BOOL, default=False),
    Field("partitions", Array(Partition)),
    Field("topic_authorized_operations", INT32, default=INT32_MIN),
)

RESPONSE = Message(
    "DescribeTopicPartitionsResponse", 75, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("topics", Array(Topic)),
    Field("next_cursor", Cursor, nullable="0+", default=None),
)
