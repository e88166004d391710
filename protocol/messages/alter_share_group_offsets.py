"""AlterShareGroupOffsets (key 91), v0, flexible (KIP-932): set share-partitions' start offsets."""

from ._dsl import INT16, INT32, INT64, STRING, UUID, Array, Field, Message, Struct

RequestPartition = Struct(
    "AlterShareGroupOffsetsRequestPartition",
    Field("partition_index", INT32),
    Field("start_offset", INT64),
)

RequestTopic = Struct(
    "AlterShareGroupOffsetsRequestTopic",
    Field("topic_name", STRING),
    Field("partitions", Array(RequestPartition)),
)

REQUEST = Message(
    "AlterShareGroupOffsetsRequest", 91, "0-0", "0+",
    Field("group_id", STRING),
    Field("topics", Array(RequestTopic)),
)

ResponsePartition = Struct(
    "AlterShareGroupOffsetsResponsePartition",
    Field("partition_index", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

ResponseTopic = Struct(
    "AlterShareGroupOffsetsResponseTopic",
    Field("topic_name", STRING),
    Field("topic_id", UUID),
    Field("partitions", Array(ResponsePartition)),
)

RESPONSE = Message(
    "AlterShareGroupOffsetsResponse", 91, "0-0", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("responses", Array(ResponseTopic)),
)
