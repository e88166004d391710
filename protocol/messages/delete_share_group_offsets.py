"""DeleteShareGroupOffsets (key 92), v0, flexible (KIP-932): drop a share group's state for topics."""

from ._dsl import INT16, INT32, STRING, UUID, Array, Field, Message, Struct

RequestTopic = Struct("DeleteShareGroupOffsetsRequestTopic", Field("topic_name", STRING))

REQUEST = Message(
    "DeleteShareGroupOffsetsRequest", 92, "0-0", "0+",
    Field("group_id", STRING),
    Field("topics", Array(RequestTopic)),
)

ResponseTopic = Struct(
    "DeleteShareGroupOffsetsResponseTopic",
    Field("topic_name", STRING),
    Field("topic_id", UUID),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

RESPONSE = Message(
    "DeleteShareGroupOffsetsResponse", 92, "0-0", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("responses", Array(ResponseTopic)),
)
