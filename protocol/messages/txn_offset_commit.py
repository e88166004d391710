"""TxnOffsetCommit (key 28), v0-5 (v4 and v5 are v3: KIP-890's TRANSACTION_ABORTABLE, implicit add); v2 adds leader
epochs; v3 flexible plus the KIP-447 group generation, member id and instance id."""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

RequestPartition = Struct(
    "TxnOffsetCommitRequestPartition",
    Field("partition_index", INT32),
    Field("committed_offset", INT64),
    Field("committed_leader_epoch", INT32, "2+", default=-1),
    Field("committed_metadata", STRING, nullable="0+"),
)

RequestTopic = Struct(
    "TxnOffsetCommitRequestTopic",
    Field("name", STRING),
    Field("partitions", Array(RequestPartition)),
)

REQUEST = Message(
    "TxnOffsetCommitRequest", 28, "0-5", "3+",
    Field("transactional_id", STRING),
    Field("group_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("generation_id_or_member_epoch", INT32, "3+", default=-1),
    Field("member_id", STRING, "3+", default=""),
    Field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    Field("topics", Array(RequestTopic)),
)

ResponsePartition = Struct(
    "TxnOffsetCommitResponsePartition",
    Field("partition_index", INT32),
    Field("error_code", INT16),
)

ResponseTopic = Struct(
    "TxnOffsetCommitResponseTopic",
    Field("name", STRING),
    Field("partitions", Array(ResponsePartition)),
)

RESPONSE = Message(
    "TxnOffsetCommitResponse", 28, "0-5", "3+",
    Field("throttle_time_ms", INT32),
    Field("topics", Array(ResponseTopic)),
)
