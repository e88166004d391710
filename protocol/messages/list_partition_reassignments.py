"""ListPartitionReassignments (key 46), v0; flexible."""

from ._dsl import INT16, INT32, STRING, Array, Field, Message, Struct

Topics = Struct("ListPartitionReassignmentsTopics", Field("name", STRING), Field("partition_indexes", Array(INT32)))

REQUEST = Message(
    "ListPartitionReassignmentsRequest", 46, "0", "0+",
    Field("timeout_ms", INT32, default=60000),
    Field("topics", Array(Topics), nullable="0+", default=None),  # null: every reassignment under way
)

OngoingPartition = Struct(
    "OngoingPartitionReassignment",
    Field("partition_index", INT32),
    Field("replicas", Array(INT32)),
    Field("adding_replicas", Array(INT32)),
    Field("removing_replicas", Array(INT32)),
)

OngoingTopic = Struct("OngoingTopicReassignment", Field("name", STRING), Field("partitions", Array(OngoingPartition)))

RESPONSE = Message(
    "ListPartitionReassignmentsResponse", 46, "0", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("topics", Array(OngoingTopic)),
)
