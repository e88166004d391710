"""DescribeShareGroupOffsets (key 90), v0-1, flexible (KIP-932): each share-partition's start offset.

v1 adds the lag. Null topics means every topic the group has state for.
"""

from ._dsl import INT16, INT32, INT64, STRING, UUID, Array, Field, Message, Struct

RequestTopic = Struct(
    "DescribeShareGroupOffsetsRequestTopic",
    Field("topic_name", STRING),
    Field("partitions", Array(INT32)),
)

RequestGroup = Struct(
    "DescribeShareGroupOffsetsRequestGroup",
    Field("group_id", STRING),
    Field("topics", Array(RequestTopic), nullable="0+"),
)

REQUEST = Message(
    "DescribeShareGroupOffsetsRequest", 90, "0-1", "0+",
    Field("groups", Array(RequestGroup)),
)

ResponsePartition = Struct(
    "DescribeShareGroupOffsetsResponsePartition",
    Field("partition_index", INT32),
    Field("start_offset", INT64),
    Field("leader_epoch", INT32),
    Field("lag", INT64, "1+", default=-1),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

ResponseTopic = Struct(
    "DescribeShareGroupOffsetsResponseTopic",
    Field("topic_name", STRING),
    Field("topic_id", UUID),
    Field("partitions", Array(ResponsePartition)),
)

ResponseGroup = Struct(
    "DescribeShareGroupOffsetsResponseGroup",
    Field("group_id", STRING),
    Field("topics", Array(ResponseTopic)),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

RESPONSE = Message(
    "DescribeShareGroupOffsetsResponse", 90, "0-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("groups", Array(ResponseGroup)),
)
