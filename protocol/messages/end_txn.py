"""EndTxn (key 26), v0-3; v3 flexible. v5 (transaction version 2) is not declared."""

from ._dsl import BOOL, INT16, INT32, INT64, STRING, Field, Message

REQUEST = Message(
    "EndTxnRequest", 26, "0-3", "3+",
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("committed", BOOL),
)

RESPONSE = Message(
    "EndTxnResponse", 26, "0-3", "3+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
)
