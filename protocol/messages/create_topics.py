"""CreateTopics (key 19), v2-7; v5 flexible, with the created topic's partitions, replication factor and
configs in the answer (KIP-525); v6 same as v5; v7 the topic id."""

from ._dsl import BOOL, INT8, INT16, INT32, STRING, UUID, Array, Field, Message, Struct

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
    "CreateTopicsRequest", 19, "2-7", "5+",
    Field("topics", Array(CreatableTopic)),
    Field("timeout_ms", INT32, default=60000),
    Field("validate_only", BOOL, "1+"),
)

TopicConfig = Struct(
    "CreatableTopicConfigs",
    Field("name", STRING),
    Field("value", STRING, nullable="5+"),
    Field("read_only", BOOL),
    Field("config_source", INT8, default=-1),
    Field("is_sensitive", BOOL),
)

TopicResult = Struct(
    "CreatableTopicResult",
    Field("name", STRING),
    Field("topic_id", UUID, "7+", default=bytes(16)),
    Field("error_code", INT16),
    Field("error_message", STRING, "1+", nullable="0+"),
    Field("topic_config_error_code", INT16, "5+", tag=0, tagged="5+"),
    Field("num_partitions", INT32, "5+", default=-1),
    Field("replication_factor", INT16, "5+", default=-1),
    Field("configs", Array(TopicConfig), "5+", nullable="5+"),
)

RESPONSE = Message(
    "CreateTopicsResponse", 19, "2-7", "5+",
    Field("throttle_time_ms", INT32, "2+"),
    Field("topics", Array(TopicResult)),
)
