"""OffsetCommit (key 8), v2-9; v8 flexible. v2-4 carry a retention time; v6 leader
epochs; v7 the group instance id; v9 (KIP-848) is v8 sent by consumer-protocol members, with
the member epoch in generation_id_or_member_epoch. v10 (topic ids) is not declared."""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

RequestPartition = Struct(
    "OffsetCommitRequestPartition",
    Field("partition_index", INT32),
    Field("committed_offset", INT64),
    Field("committed_leader_epoch", INT32, "6+", default=-1),
    Field("committed_metadata", STRING, nullable="0+"),
)

RequestTopic = Struct(
    "OffsetCommitRequestTopic",
    Field("name", STRING),
    Field("partitions", Array(RequestPartition)),
)

REQUEST = Message(
    "OffsetCommitRequest", 8, "2-9", "8+",
    Field("group_id", STRING),
    Field("generation_id_or_member_epoch", INT32, default=-1),
    Field("member_id", STRING),
    Field("group_instance_id", STRING, "7+", nullable="7+", default=None),
    Field("retention_time_ms", INT64, "2-4", default=-1),
    Field("topics", Array(RequestTopic)),
)

ResponsePartition = Struct(
    "OffsetCommitResponsePartition",
    Field("partition_index", INT32),
    Field("error_code", INT16),
)

ResponseTopic = Struct(
    "OffsetCommitResponseTopic",
    Field("name", STRING),
    Field("partitions", Array(ResponsePartition)),
)

RESPONSE = Message(
    "OffsetCommitResponse", 8, "2-9", "8+",
    Field("throttle_time_ms", INT32, "3+"),
    Field("topics", Array(ResponseTopic)),
)
