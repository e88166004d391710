"""CreatePartitions (key 37), v0-3; v2+ flexible."""

from ._dsl import BOOL, INT16, INT32, STRING, Array, Field, Message, Struct

Assignment = Struct(
    "CreatePartitionsAssignment",
    Field("broker_ids", Array(INT32)),
)

Topic = Struct(
    "CreatePartitionsTopic",
    Field("name", STRING),
    Field("count", INT32),
    Field("assignments", Array(Assignment), nullable="0+", default=None),
)

REQUEST = Message(
    "CreatePartitionsRequest", 37, "0-3", "2+",
    Field("topics", Array(Topic)),
    Field("timeout_ms", INT32),
    Field("validate_only", BOOL),
)

TopicResult = Struct(
    "CreatePartitionsTopicResult",
    Field("name", STRING),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

RESPONSE = Message(
    "CreatePartitionsResponse", 37, "0-3", "2+",
    Field("throttle_time_ms", INT32),
    Field("results", Array(TopicResult)),
)
