"""ListOffsets (key 2), v1-7; v6+ flexible."""

from ._dsl import INT8, INT16, INT32, INT64, STRING, Array, Field, Message, Struct

RequestPartition = Struct(
    "ListOffsetsPartition",
    Field("partition_index", INT32),
    Field("current_leader_epoch", INT32, "4+", default=-1),
    Field("timestamp", INT64),
)

RequestTopic = Struct(
    "ListOffsetsTopic",
    Field("name", STRING),
    Field("partitions", Array(RequestPartition)),
)

REQUEST = Message(
    "ListOffsetsRequest", 2, "1-7", "6+",
    Field("replica_id", INT32),
    Field("isolation_level", INT8, "2+"),
    Field("topics", Array(RequestTopic)),
)

PartitionResponse = Struct(
    "ListOffsetsPartitionResponse",
    Field("partition_index", INT32),
    Field("error_code", INT16),
    Field("timestamp", INT64, "1+", default=-1),
    Field("offset", INT64, "1+", default=-1),
    Field("leader_epoch", INT32, "4+", default=-1),
)

TopicResponse = Struct(
    "ListOffsetsTopicResponse",
    Field("name", STRING),
    Field("partitions", Array(PartitionResponse)),
)

RESPONSE = Message(
    "ListOffsetsResponse", 2, "1-7", "6+",
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", Array(TopicResponse)),
)
