"""DescribeProducers (key 61), v0; flexible."""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

TopicRequest = Struct(
    "TopicRequest",
    Field("name", STRING),
    Field("partition_indexes", Array(INT32)),
)

REQUEST = Message(
    "DescribeProducersRequest", 61, "0", "0+",
    Field("topics", Array(TopicRequest)),
)

ProducerState = Struct(
    "ProducerState",
    Field("producer_id", INT64),
    Field("producer_epoch", INT32),
    Field("last_sequence", INT32, default=-1),
    Field("last_timestamp", INT64, default=-1),
    Field("coordinator_epoch", INT32),
    Field("current_txn_start_offset", INT64, default=-1),
)

PartitionResponse = Struct(
    "PartitionResponse",
    Field("partition_index", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("active_producers", Array(ProducerState)),
)

TopicResponse = Struct(
    "TopicResponse",
    Field("name", STRING),
    Field("partitions", Array(PartitionResponse)),
)

RESPONSE = Message(
    "DescribeProducersResponse", 61, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("topics", Array(TopicResponse)),
)
