"""DescribeCluster (key 60), v0-2; flexible from v0."""

from ._dsl import BOOL, INT8, INT16, INT32, INT32_MIN, STRING, Array, Field, Message, Struct

BROKER_ENDPOINT = 1  # EndpointType.BROKER; 2 is CONTROLLER

REQUEST = Message(
    "DescribeClusterRequest", 60, "0-2", "0+",
    Field("include_cluster_authorized_operations", BOOL),
    Field("endpoint_type", INT8, "1+", default=BROKER_ENDPOINT),
    Field("include_fenced_brokers", BOOL, "2+"),
)

Broker = Struct(
    "DescribeClusterBroker",
    Field("broker_id", INT32),
    Field("host", STRING),
    Field("port", INT32),
    Field("rack", STRING, nullable="0+", default=None),
    Field("is_fenced", BOOL, "2+"),
)

RESPONSE = Message(
    "DescribeClusterResponse", 60, "0-2", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("endpoint_type", INT8, "1+", default=BROKER_ENDPOINT),
    Field("cluster_id", STRING),
    Field("controller_id", INT32, default=-1),
    Field("brokers", Array(Broker)),
    Field("cluster_authorized_operations", INT32, default=INT32_MIN),
)
