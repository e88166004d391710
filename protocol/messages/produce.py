"""Produce (key 0), v3-12; v9+ flexible; v11 and v12 are v10 (KIP-890: TRANSACTION_ABORTABLE; a
transaction's partitions added by Produce itself). v0-2 are advertised but refused (see handlers/produce.py)."""

from ._dsl import INT16, INT32, INT64, RECORDS, STRING, Array, Field, Message, Struct

PartitionData = Struct(
    "PartitionProduceData",
    Field("index", INT32),
    Field("records", RECORDS, nullable="0+"),
)

TopicData = Struct(
    "TopicProduceData",
    Field("name", STRING, "0-12"),
    Field("partition_data", Array(PartitionData)),
)

REQUEST = Message(
    "ProduceRequest", 0, "3-12", "9+",
    Field("transactional_id", STRING, "3+", nullable="3+"),
    Field("acks", INT16),
    Field("timeout_ms", INT32),
    Field("topic_data", Array(TopicData)),
)

LeaderIdAndEpoch = Struct(
    "LeaderIdAndEpoch",
    Field("leader_id", INT32, "10+", default=-1),
    Field("leader_epoch", INT32, "10+", default=-1),
)

PartitionResponse = Struct(
    "PartitionProduceResponse",
    Field("index", INT32),
    Field("error_code", INT16),
    Field("base_offset", INT64),
    Field("log_append_time_ms", INT64, "2+", default=-1),
    Field("log_start_offset", INT64, "5+", default=-1),
    Field("record_errors", Array(Struct(
        "BatchIndexAndErrorMessage",
        Field("batch_index", INT32, "8+"),
        Field("batch_index_error_message", STRING, "8+", nullable="8+"),
    )), "8+"),
    Field("error_message", STRING, "8+", nullable="8+"),
    Field("current_leader", LeaderIdAndEpoch, "10+", tag=0, tagged="10+"),
)

TopicResponse = Struct(
    "TopicProduceResponse",
    Field("name", STRING, "0-12"),
    Field("partition_responses", Array(PartitionResponse)),
)

RESPONSE = Message(
    "ProduceResponse", 0, "3-12", "9+",
    Field("responses", Array(TopicResponse)),
    Field("throttle_time_ms", INT32, "1+"),
    Field("node_endpoints", Array(Struct(
        "NodeEndpoint",
        Field("node_id", INT32, "10+"),
        Field("host", STRING, "10+"),
        Field("port", INT32, "10+"),
        Field("rack", STRING, "10+", nullable="10+"),
    )), "10+", tag=0, tagged="10+"),
)
