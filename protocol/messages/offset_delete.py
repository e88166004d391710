"""OffsetDelete (key 47), v0 only; never flexible."""

from ._dsl import INT16, INT32, STRING, Array, Field, Message, Struct

RequestPartition = Struct("OffsetDeleteRequestPartition", Field("partition_index", INT32))

RequestTopic = Struct(
    "OffsetDeleteRequestTopic",
    Field("name", STRING),
    Field("partitions", Array(RequestPartition)),
)

REQUEST = Message(
    "OffsetDeleteRequest", 47, "0", "none",
    Field("group_id", STRING),
    Field("topics", Array(RequestTopic)),
)

ResponsePartition = Struct(
    "OffsetDeleteResponsePartition",
    Field("partition_index", INT32),
    Field("error_code", INT16),
)

ResponseTopic = Struct(
    "OffsetDeleteResponseTopic",
    Field("name", STRING),
    Field("partitions", Array(ResponsePartition)),
)

RESPONSE = Message(
    "OffsetDeleteResponse", 47, "0", "none",
    Field("error_code", INT16),
    Field("throttle_time_ms", INT32),
    Field("topics", Array(ResponseTopic)),
)
