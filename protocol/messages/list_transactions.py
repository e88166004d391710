"""ListTransactions (key 66), v0-2; flexible."""

from ._dsl import INT16, INT32, INT64, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "ListTransactionsRequest", 66, "0-2", "0+",
    Field("state_filters", Array(STRING)),
    Field("producer_id_filters", Array(INT64)),
    Field("duration_filter", INT64, "1+", default=-1),
    Field("transactional_id_pattern", STRING, "2+", nullable="2+", default=None),
)

TransactionState = Struct(
    "TransactionState",
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("transaction_state", STRING),
)

RESPONSE = Message(
    "ListTransactionsResponse", 66, "0-2", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("unknown_state_filters", Array(STRING)),
    Field("transaction_states", Array(TransactionState)),
)
