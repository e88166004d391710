"""DescribeAcls (key 29), v1-3 (Kafka 4 removed v0); v2 flexible."""

from ._dsl import INT8, INT16, INT32, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "DescribeAclsRequest", 29, "1-3", "2+",
    Field("resource_type_filter", INT8),
    Field("resource_name_filter", STRING, nullable="0+", default=None),
    Field("pattern_type_filter", INT8, "1+", default=3),
    Field("principal_filter", STRING, nullable="0+", default=None),
    Field("host_filter", STRING, nullable="0+", default=None),
    Field("operation", INT8),
    Field("permission_type", INT8),
)

AclDescription = Struct(
    "AclDescription",
    Field("principal", STRING),
    Field("host", STRING),
    Field("operation", INT8),
    Field("permission_type", INT8),
)

Resource = Struct(
    "DescribeAclsResource",
    Field("resource_type", INT8),
    Field("resource_name", STRING),
    Field("pattern_type", INT8, "1+", default=3),
    Field("acls", Array(AclDescription)),
)

RESPONSE = Message(
    "DescribeAclsResponse", 29, "1-3", "2+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("resources", Array(Resource)),
)
