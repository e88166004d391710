"""FindCoordinator (key 10), v0-4; v3+ flexible; v4 batches keys."""

from ._dsl import INT8, INT16, INT32, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "FindCoordinatorRequest", 10, "0-4", "3+",
    Field("key", STRING, "0-3"),
    Field("key_type", INT8, "1+"),
    Field("coordinator_keys", Array(STRING), "4+"),
)

Coordinator = Struct(
    "Coordinator",
    Field("key", STRING, "4+"),
    Field("node_id", INT32, "4+"),
    Field("host", STRING, "4+"),
    Field("port", INT32, "4+"),
    Field("error_code", INT16, "4+"),
    Field("error_message", STRING, "4+", nullable="4+"),
)

RESPONSE = Message(
    "FindCoordinatorResponse", 10, "0-4", "3+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("error_code", INT16, "0-3"),
    Field("error_message", STRING, "1-3", nullable="1-3"),
    Field("node_id", INT32, "0-3"),
    Field("host", STRING, "0-3"),
    Field("port", INT32, "0-3"),
    Field("coordinators", Array(Coordinator), "4+"),
)
