"""AddPartitionsToTxn (key 24), v0-3: the client form; v3 flexible.

v4+ is the broker-to-broker batched form (KIP-890 verification) that clients
never send; it is not declared.
"""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

Topic = Struct(
    "AddPartitionsToTxnTopic",
    Field("name", STRING),
    Field("partitions", Array(INT32)),
)

REQUEST = Message(
    "AddPartitionsToTxnRequest", 24, "0-3", "3+",
    Field("v3_and_below_transactional_id", STRING, "0-3"),
    Field("v3_and_below_producer_id", INT64, "0-3"),
    Field("v3_and_below_producer_epoch", INT16, "0-3"),
    Field("v3_and_below_topics", Array(Topic), "0-3"),
)

PartitionResult = Struct(
    "AddPartitionsToTxnPartitionResult",
    Field("partition_index", INT32),
    Field("partition_error_code", INT16),
)

TopicResult = Struct(
    "AddPartitionsToTxnTopicResult",
    Field("name", STRING),
    Field("results_by_partition", Array(PartitionResult)),
)

RESPONSE = Message(
    "AddPartitionsToTxnResponse", 24, "0-3", "3+",
    Field("throttle_time_ms", INT32),
    Field("results_by_topic_v3_and_below", Array(TopicResult), "0-3"),
)
