"""DeleteRecords (key 21), v0-2; v2+ flexible."""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

HIGH_WATERMARK = -1  # an offset of -1 means "up to the high watermark"

RequestPartition = Struct(
    "DeleteRecordsPartition",
    Field("partition_index", INT32),
    Field("offset", INT64),
)

RequestTopic = Struct(
    "DeleteRecordsTopic",
    Field("name", STRING),
    Field("partitions", Array(RequestPartition)),
)

REQUEST = Message(
    "DeleteRecordsRequest", 21, "0-2", "2+",
    Field("topics", Array(RequestTopic)),
    Field("timeout_ms", INT32),
)

PartitionResult = Struct(
    "DeleteRecordsPartitionResult",
    Field("partition_index", INT32),
    Field("low_watermark", INT64),
    Field("error_code", INT16),
)

TopicResult = Struct(
    "DeleteRecordsTopicResult",
    Field("name", STRING),
    Field("partitions", Array(PartitionResult)),
)

RESPONSE = Message(
    "DeleteRecordsResponse", 21, "0-2", "2+",
    Field("throttle_time_ms", INT32),
    Field("topics", Array(TopicResult)),
)
