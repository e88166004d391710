"""Fetch (key 1), v4-12; v12 flexible. Topic ids (v13+) are not served."""

from ._dsl import INT8, INT16, INT32, INT64, RECORDS, STRING, Array, Field, Message, Struct

FetchPartition = Struct(
    "FetchPartition",
    Field("partition", INT32),
    Field("current_leader_epoch", INT32, "9+", default=-1),
    Field("fetch_offset", INT64),
    Field("last_fetched_epoch", INT32, "12+", default=-1),
    Field("log_start_offset", INT64, "5+", default=-1),
    Field("partition_max_bytes", INT32),
)

FetchTopic = Struct(
    "FetchTopic",
    Field("topic", STRING, "0-12"),
    Field("partitions", Array(FetchPartition)),
)

REQUEST = Message(
    "FetchRequest", 1, "4-12", "12+",
    Field("cluster_id", STRING, "12+", nullable="12+", tag=0, tagged="12+", default=None),
    Field("replica_id", INT32, "0-14", default=-1),
    Field("max_wait_ms", INT32),
    Field("min_bytes", INT32),
    Field("max_bytes", INT32, "3+", default=0x7FFFFFFF),
    Field("isolation_level", INT8, "4+"),
    Field("session_id", INT32, "7+"),
    Field("session_epoch", INT32, "7+", default=-1),
    Field("topics", Array(FetchTopic)),
    Field("forgotten_topics_data", Array(Struct(
        "ForgottenTopic",
        Field("topic", STRING, "7-12"),
        Field("partitions", Array(INT32), "7+"),
    )), "7+"),
    Field("rack_id", STRING, "11+"),
)

AbortedTransaction = Struct(
    "AbortedTransaction",
    Field("producer_id", INT64, "4+"),
    Field("first_offset", INT64, "4+"),
)

PartitionData = Struct(
    "PartitionData",
    Field("partition_index", INT32),
    Field("error_code", INT16),
    Field("high_watermark", INT64),
    Field("last_stable_offset", INT64, "4+", default=-1),
    Field("log_start_offset", INT64, "5+", default=-1),
    Field("diverging_epoch", Struct(
        "EpochEndOffset",
        Field("epoch", INT32, "12+", default=-1),
        Field("end_offset", INT64, "12+", default=-1),
    ), "12+", tag=0, tagged="12+"),
    Field("current_leader", Struct(
        "LeaderIdAndEpoch",
        Field("leader_id", INT32, "12+", default=-1),
        Field("leader_epoch", INT32, "12+", default=-1),
    ), "12+", tag=1, tagged="12+"),
    Field("snapshot_id", Struct(
        "SnapshotId",
        Field("end_offset", INT64, default=-1),
        Field("epoch", INT32, default=-1),
    ), "12+", tag=2, tagged="12+"),
    Field("aborted_transactions", Array(AbortedTransaction), "4+", nullable="4+"),
    Field("preferred_read_replica", INT32, "11+", default=-1),
    Field("records", RECORDS, nullable="0+"),
)

TopicResponse = Struct(
    "FetchableTopicResponse",
    Field("topic", STRING, "0-12"),
    Field("partitions", Array(PartitionData)),
)

RESPONSE = Message(
    "FetchResponse", 1, "4-12", "12+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16, "7+"),
    Field("session_id", INT32, "7+"),
    Field("responses", Array(TopicResponse)),
)
