"""EndTxn (key 26), v0-5; v3 flexible; v4 may answer TRANSACTION_ABORTABLE; v5 (transaction
version 2, KIP-890 part 2) answers the producer id and epoch the producer goes on with."""

from ._dsl import BOOL, INT16, INT32, INT64, STRING, Field, Message

REQUEST = Message(
    "EndTxnRequest", 26, "0-5", "3+",
    Field("transactional_id", STRING),
    Field("producer_id", INT64),
    Field("producer_epoch", INT16),
    Field("committed", BOOL),
)

RESPONSE = Message(
    "EndTxnResponse", 26, "0-5", "3+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("producer_id", INT64, "5+", default=-1),
    Field("producer_epoch", INT16, "5+", default=-1),
)
