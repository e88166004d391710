"""StreamsGroupHeartbeat (key 88), v0-1, flexible (KIP-1071): a Kafka Streams member's one group API.

The member sends its topology with the first heartbeat of a topology epoch and its owned tasks when
they change; the broker answers with the member's target tasks (active, standby, warm-up), the
group's status (missing or mis-partitioned topics) and where other members' tasks live. Null
fields mean "unchanged since the last heartbeat". v1 (Kafka 4.4) widens the acceptable recovery lag
to INT64, moving it after task_offset_interval_ms, and adds topology_description_required.
"""

from ._dsl import BOOL, INT8, INT16, INT32, INT64, STRING, Array, Field, Message, Struct
from ._streams_shapes import Endpoint, KeyValue, TaskIds, TaskOffset, TopicInfo

CopartitionGroup = Struct(
    "CopartitionGroup",
    Field("source_topics", Array(INT16)),
    Field("source_topic_regex", Array(INT16)),
    Field("repartition_source_topics", Array(INT16)),
)

Subtopology = Struct(
    "Subtopology",
    Field("subtopology_id", STRING),
    Field("source_topics", Array(STRING)),
    Field("source_topic_regex", Array(STRING)),
    Field("state_changelog_topics", Array(TopicInfo)),
    Field("repartition_sink_topics", Array(STRING)),
    Field("repartition_source_topics", Array(TopicInfo)),
    Field("copartition_groups", Array(CopartitionGroup)),
)

Topology = Struct("Topology", Field("epoch", INT32), Field("subtopologies", Array(Subtopology)))

REQUEST = Message(
    "StreamsGroupHeartbeatRequest", 88, "0-1", "0+",
    Field("group_id", STRING),
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("endpoint_information_epoch", INT32),
    Field("instance_id", STRING, nullable="0+", default=None),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("rebalance_timeout_ms", INT32, default=-1),
    Field("topology", Topology, nullable="0+", default=None),
    Field("active_tasks", Array(TaskIds), nullable="0+", default=None),
    Field("standby_tasks", Array(TaskIds), nullable="0+", default=None),
    Field("warmup_tasks", Array(TaskIds), nullable="0+", default=None),
    Field("process_id", STRING, nullable="0+", default=None),
    Field("user_endpoint", Endpoint, nullable="0+", default=None),
    Field("client_tags", Array(KeyValue), nullable="0+", default=None),
    Field("task_offsets", Array(TaskOffset), nullable="0+", default=None),
    Field("task_end_offsets", Array(TaskOffset), nullable="0+", default=None),
    Field("shutdown_application", BOOL, default=False),
)

Status = Struct("Status", Field("status_code", INT8), Field("status_detail", STRING))

TopicPartitions = Struct("TopicPartitions", Field("topic", STRING), Field("partitions", Array(INT32)))

EndpointToPartitions = Struct(
    "EndpointToPartitions",
    Field("user_endpoint", Endpoint),
    Field("active_partitions", Array(TopicPartitions)),
    Field("standby_partitions", Array(TopicPartitions)),
)

RESPONSE = Message(
    "StreamsGroupHeartbeatResponse", 88, "0-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("heartbeat_interval_ms", INT32),
    Field("acceptable_recovery_lag_legacy", INT32, "0", default=10000),
    Field("task_offset_interval_ms", INT32),
    Field("acceptable_recovery_lag", INT64, "1+", default=10000),
    Field("status", Array(Status), nullable="0+", default=None),
    Field("active_tasks", Array(TaskIds), nullable="0+", default=None),
    Field("standby_tasks", Array(TaskIds), nullable="0+", default=None),
    Field("warmup_tasks", Array(TaskIds), nullable="0+", default=None),
    Field("topology_description_required", BOOL, "1+", default=False),
    Field("endpoint_information_epoch", INT32),
    Field("partitions_by_user_endpoint", Array(EndpointToPartitions), nullable="0+", default=None),
)
