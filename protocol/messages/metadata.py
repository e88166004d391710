"""Metadata (key 3), v0-12; v9+ flexible."""

from ._dsl import BOOL, INT16, INT32, INT32_MIN, STRING, UUID, Array, Field, Message, Struct

RequestTopic = Struct(
    "MetadataRequestTopic",
    Field("topic_id", UUID, "10+"),
    Field("name", STRING, nullable="10+"),
)

REQUEST = Message(
    "MetadataRequest", 3, "0-12", "9+",
    Field("topics", Array(RequestTopic), nullable="1+"),
    Field("allow_auto_topic_creation", BOOL, "4+", default=True),
    Field("include_cluster_authorized_operations", BOOL, "8-10"),
    Field("include_topic_authorized_operations", BOOL, "8+"),
)

Broker = Struct(
    "MetadataResponseBroker",
    Field("node_id", INT32),
    Field("host", STRING),
    Field("port", INT32),
    Field("rack", STRING, "1+", nullable="1+"),
)

Partition = Struct(
    "MetadataResponsePartition",
    Field("error_code", INT16),
    Field("partition_index", INT32),
    Field("leader_id", INT32),
    Field("leader_epoch", INT32, "7+", default=-1),
    Field("replica_nodes", Array(INT32)),
    Field("isr_nodes", Array(INT32)),
    Field("offline_replicas", Array(INT32), "5+"),
)

Topic = Struct(
    "MetadataResponseTopic",
    Field("error_code", INT16),
    Field("name", STRING, nullable="12+"),
    Field("topic_id", UUID, "10+"),
    Field("is_internal", BOOL, "1+"),
    Field("partitions", Array(Partition)),
    Field("topic_authorized_operations", INT32, "8+", default=INT32_MIN),
)

RESPONSE = Message(
    "MetadataResponse", 3, "0-12", "9+",
    Field("throttle_time_ms", INT32, "3+"),
    Field("brokers", Array(Broker)),
    Field("cluster_id", STRING, "2+", nullable="2+"),
    Field("controller_id", INT32, "1+", default=-1),
    Field("topics", Array(Topic)),
    Field("cluster_authorized_operations", INT32, "8-10", default=INT32_MIN),
)
