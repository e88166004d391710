"""DescribeTransactions (key 65), v0; flexible."""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "DescribeTransactionsRequest", 65, "0", "0+",
    Field("transactional_ids", Array(STRING)),
)

TopicData = Struct(
    "TopicData",
    Field("topic", STRING),
    Field("partitions", Array(INT32)),
)

TransactionState = Struct(
    "TransactionState",
    Field("error_code", INT16),
    Field("transactional_id", STRING),
    Field("transaction_state", STRING),
    Field("transaction_timeout_ms", INT32),
    Field("transaction_start_time_ms", INT64),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("topics", Array(TopicData)),
)

RESPONSE = Message(
    "DescribeTransactionsResponse", 65, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("transaction_states", Array(TransactionState)),
)
