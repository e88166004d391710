"""StreamsGroupDescribe (key 89), v0-1, flexible (KIP-1071): streams groups, their topology, members
and assignments (what ``kafka-streams-groups --describe`` prints). v1 (Kafka 4.4) may ask for the
topology description the members sent with StreamsGroupTopologyDescriptionUpdate, and names the
group's assignor."""

from ._dsl import BOOL, INT8, INT16, INT32, INT32_MIN, STRING, Array, Field, Message, Struct
from ._streams_shapes import Endpoint, KeyValue, TaskIds, TaskOffset, TopicInfo, TopologyDescription

REQUEST = Message(
    "StreamsGroupDescribeRequest", 89, "0-1", "0+",
    Field("group_ids", Array(STRING)),
    Field("include_authorized_operations", BOOL),
    Field("include_topology_description", BOOL, "1+", default=False),
)

Subtopology = Struct(
    "Subtopology",
    Field("subtopology_id", STRING),
    Field("source_topics", Array(STRING)),
    Field("repartition_sink_topics", Array(STRING)),
    Field("state_changelog_topics", Array(TopicInfo)),
    Field("repartition_source_topics", Array(TopicInfo)),
)

Topology = Struct(
    "Topology", Field("epoch", INT32), Field("subtopologies", Array(Subtopology), nullable="0+", default=None)
)

Assignment = Struct(
    "Assignment",
    Field("active_tasks", Array(TaskIds)),
    Field("standby_tasks", Array(TaskIds)),
    Field("warmup_tasks", Array(TaskIds)),
)

Member = Struct(
    "Member",
    Field("member_id", STRING),
    Field("member_epoch", INT32),
    Field("instance_id", STRING, nullable="0+", default=None),
    Field("rack_id", STRING, nullable="0+", default=None),
    Field("client_id", STRING),
    Field("client_host", STRING),
    Field("topology_epoch", INT32),
    Field("process_id", STRING),
    Field("user_endpoint", Endpoint, nullable="0+", default=None),
    Field("client_tags", Array(KeyValue)),
    Field("task_offsets", Array(TaskOffset)),
    Field("task_end_offsets", Array(TaskOffset)),
    Field("assignment", Assignment),
    Field("target_assignment", Assignment),
    Field("is_classic", BOOL),
)

DescribedGroup = Struct(
    "DescribedGroup",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("group_id", STRING),
    Field("group_state", STRING),
    Field("group_epoch", INT32),
    Field("assignment_epoch", INT32),
    Field("topology", Topology, nullable="0+", default=None),
    Field("members", Array(Member)),
    Field("authorized_operations", INT32, default=INT32_MIN),
    Field("topology_description", TopologyDescription, "1+", nullable="1+", default=None),
    Field("topology_description_status", INT8, "1+", default=0),
    Field("assignor_name", STRING, "1+", nullable="1+", default=None),
)

RESPONSE = Message(
    "StreamsGroupDescribeResponse", 89, "0-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("groups", Array(DescribedGroup)),
)
