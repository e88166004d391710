"""Structures the streams-group messages (KIP-1071) share: tasks, topic infos, endpoints, topology
descriptions. Kafka declares them once per message JSON as common structs; so do we, once."""

from ._dsl import INT8, INT16, INT32, INT64, STRING, UINT16, Array, Field, Struct

KeyValue = Struct("KeyValue", Field("key", STRING), Field("value", STRING))

#: one subtopology's task partitions (a task is subtopology id + partition)
TaskIds = Struct("TaskIds", Field("subtopology_id", STRING), Field("partitions", Array(INT32)))

#: an internal topic the topology asks the broker to create: partitions 0 = "as many as the sources"
TopicInfo = Struct(
    "TopicInfo",
    Field("name", STRING),
    Field("partitions", INT32),
    Field("replication_factor", INT16),
    Field("topic_configs", Array(KeyValue)),
)

Endpoint = Struct("Endpoint", Field("host", STRING), Field("port", UINT16))

TaskOffset = Struct(
    "TaskOffset", Field("subtopology_id", STRING), Field("partition", INT32), Field("offset", INT64)
)

DescribedNode = Struct(
    "DescribedNode",
    Field("name", STRING),
    Field("node_type", INT8),
    Field("source_topics", Array(STRING)),
    Field("sink_topic", STRING, nullable="0+", default=None),
    Field("stores", Array(STRING)),
    Field("successors", Array(STRING)),
)

TopologyDescription = Struct(
    "TopologyDescription",
    Field("subtopologies", Array(Struct("DescribedSubtopology", Field("subtopology_id", STRING),
                                        Field("nodes", Array(DescribedNode))))),
    Field("global_stores", Array(Struct("GlobalStore", Field("source", DescribedNode),
                                        Field("processor", DescribedNode)))),
)
