"""AlterPartitionReassignments (key 45), v0-1; flexible."""

from ._dsl import BOOL, INT16, INT32, STRING, Array, Field, Message, Struct

ReassignablePartition = Struct(
    "ReassignablePartition",
    Field("partition_index", INT32),
    Field("replicas", Array(INT32), nullable="0+", default=None),  # null cancels a reassignment
)

ReassignableTopic = Struct("ReassignableTopic", Field("name", STRING),
                           Field("partitions", Array(ReassignablePartition)))

REQUEST = Message(
    "AlterPartitionReassignmentsRequest", 45, "0-1", "0+",
    Field("timeout_ms", INT32, default=60000),
    Field("allow_replication_factor_change", BOOL, "1+", default=True),
    Field("topics", Array(ReassignableTopic)),
)

PartitionResponse = Struct(
    "ReassignablePartitionResponse",
    Field("partition_index", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

TopicResponse = Struct("ReassignableTopicResponse", Field("name", STRING),
                       Field("partitions", Array(PartitionResponse)))

RESPONSE = Message(
    "AlterPartitionReassignmentsResponse", 45, "0-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("allow_replication_factor_change", BOOL, "1+", default=True),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("responses", Array(TopicResponse)),
)
