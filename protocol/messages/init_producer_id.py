"""InitProducerId (key 22), v0-5 (v5 is v4 plus KIP-890's TRANSACTION_ABORTABLE); v2+ flexible;
v3 adds KIP-360 producer id and epoch."""

from ._dsl import INT16, INT32, INT64, STRING, Field, Message

REQUEST = Message(
    "InitProducerIdRequest", 22, "0-5", "2+",
    Field("transactional_id", STRING, nullable="0+"),
    Field("transaction_timeout_ms", INT32),
    Field("producer_id", INT64, "3+", default=-1),
    Field("producer_epoch", INT16, "3+", default=-1),
)

RESPONSE = Message(
    "InitProducerIdResponse", 22, "0-5", "2+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("producer_id", INT64, default=-1),
    Field("producer_epoch", INT16),
)
