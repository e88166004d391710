"""DeleteTopics (key 20), v1-4; v4 flexible. Topic ids (v6) are not served."""

from ._dsl import INT16, INT32, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "DeleteTopicsRequest", 20, "1-4", "4+",
    Field("topic_names", Array(STRING), "0-5"),
    Field("timeout_ms", INT32),
)

TopicResult = Struct(
    "DeletableTopicResult",
    Field("name", STRING, nullable="6+"),
    Field("error_code", INT16),
)

RESPONSE = Message(
    "DeleteTopicsResponse", 20, "1-4", "4+",
    Field("throttle_time_ms", INT32, "1+"),
    Field("responses", Array(TopicResult)),
)
