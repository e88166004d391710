"""CreateTopics (key 19), v2-4 (flexible versions, v5+, are not served)."""

from ._dsl import BOOL, INT16, INT32, STRING, Array, Field, Message, Struct

CreatableReplicaAssignment = Struct(
    "CreatableReplicaAssignment",
    Field("partition_index", INT32),
    Field("broker_ids", Array(INT32)),
)

CreatableTopicConfig = Struct(
    "CreatableTopicConfig",
    Field("name", STRING),
    Field("value", STRING, nullable="0+"),
)

CreatableTopic = Struct(
    "CreatableTopic",
    Field("name", STRING),
    Field("num_partitions", INT32),
    Field("replication_factor", INT16),
    Field("assignments", Array(CreatableReplicaAssignment)),
    Field("configs", Array(CreatableTopicConfig)),
)

REQUEST = Message(
    "CreateTopicsRequest", 19, "2-4", "5+",
    Field("topics", Array(CreatableTopic)),
    Field("timeout_ms", INT32, default=60000),
    Field("validate_only", BOOL, "1+"),
)

TopicResult = Struct(
    "CreatableTopicResult",
    Field("name", STRING),
    Field("error_code", INT16),
    Field("error_message", STRING, "1+", nullable="0+"),
)

RESPONSE = Message(
    "CreateTopicsResponse", 19, "2-4", "5+",
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", Array(TopicResult)),
)
