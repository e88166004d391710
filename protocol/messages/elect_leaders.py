"""ElectLeaders (key 43), v0-2; flexible from v2."""

from ._dsl import INT8, INT16, INT32, STRING, Array, Field, Message, Struct

TopicPartitions = Struct("TopicPartitions", Field("topic", STRING), Field("partitions", Array(INT32)))

REQUEST = Message(
    "ElectLeadersRequest", 43, "0-2", "2+",
    Field("election_type", INT8, "1+"),  # 0 preferred, 1 unclean; v0 is preferred
    Field("topic_partitions", Array(TopicPartitions), nullable="0+", default=None),
    Field("timeout_ms", INT32, default=60000),
)

PartitionResult = Struct(
    "PartitionResult",
    Field("partition_id", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

ReplicaElectionResult = Struct(
    "ReplicaElectionResult", Field("topic", STRING), Field("partition_result", Array(PartitionResult)))

RESPONSE = Message(
    "ElectLeadersResponse", 43, "0-2", "2+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16, "1+"),
    Field("replica_election_results", Array(ReplicaElectionResult)),
)
