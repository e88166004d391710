"""AddOffsetsToTxn (key 25), v0-4; v3 flexible; v4 is v3 plus KIP-890's TRANSACTION_ABORTABLE."""

from ._dsl import INT16, INT32, INT64, STRING, Field, Message

REQUEST = Message(
    "AddOffsetsToTxnRequest", 25, "0-4", "3+",
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("group_id", STRING),
)

RESPONSE = Message(
    "AddOffsetsToTxnResponse", 25, "0-4", "3+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
)
