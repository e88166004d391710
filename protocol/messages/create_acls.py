"""CreateAcls (key 30), v1-3 (Kafka 4 removed v0); v2 flexible."""

from ._dsl import INT8, INT16, INT32, STRING, Array, Field, Message, Struct

Creation = Struct(
    "AclCreation",
    Field("resource_type", INT8),
    Field("resource_name", STRING),
    Field("resource_pattern_type", INT8, "1+", default=3),
    Field("principal", STRING),
    Field("host", STRING),
    Field("operation", INT8),
    Field("permission_type", INT8),
)

REQUEST = Message(
    "CreateAclsRequest", 30, "1-3", "2+",
    Field("creations", Array(Creation)),
)

Result = Struct(
    "AclCreationResult",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
)

RESPONSE = Message(
    "CreateAclsResponse", 30, "1-3", "2+",
    Field("throttle_time_ms", INT32),
    Field("results", Array(Result)),
)
