"""OffsetForLeaderEpoch (key 23), v2-4; v4 flexible."""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "OffsetForLeaderEpochRequest", 23, "2-4", "4+",
    Field("replica_id", INT32, "3+", default=-2),
    Field("topics", Array(Struct(
        "OffsetForLeaderTopic",
        Field("topic", STRING),
        Field("partitions", Array(Struct(
            "OffsetForLeaderPartition",
            Field("partition", INT32),
            Field("current_leader_epoch", INT32, "2+", default=-1),
            Field("leader_epoch", INT32),
        ))),
    ))),
)

EpochEndOffset = Struct(
    "EpochEndOffset",
    Field("error_code", INT16),
    Field("partition", INT32),
    Field("leader_epoch", INT32, "1+", default=-1),
    Field("end_offset", INT64, default=-1),
)

TopicResult = Struct(
    "OffsetForLeaderTopicResult",
    Field("topic", STRING),
    Field("partitions", Array(EpochEndOffset)),
)

RESPONSE = Message(
    "OffsetForLeaderEpochResponse", 23, "2-4", "4+",
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", Array(TopicResult)),
)
