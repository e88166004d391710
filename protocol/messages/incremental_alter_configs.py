"""IncrementalAlterConfigs (key 44), v0-1; v1+ flexible."""

from ._dsl import BOOL, INT8, INT16, INT32, STRING, Array, Field, Message, Struct

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp.OpType ids

AlterableConfig = Struct(
    "AlterableConfig",
    Field("name", STRING),
    Field("config_operation", INT8),
    Field("value", STRING, nullable="0+"),
)

Resource = Struct(
    "AlterConfigsResource",
    Field("resource_type", INT8),
    Field("resource_name", STRING),
    Field("configs", Array(AlterableConfig)),
)

REQUEST = Message(
    "IncrementalAlterConfigsRequest", 44, "0-1", "1+",
    Field("resources", Array(Resource)),
    Field("validate_only", BOOL),
)

ResourceResponse = Struct(
    "AlterConfigsResourceResponse",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("resource_type", INT8),
    Field("resource_name", STRING),
)

RESPONSE = Message(
    "IncrementalAlterConfigsResponse", 44, "0-1", "1+",
    Field("throttle_time_ms", INT32),
    Field("responses", Array(ResourceResponse)),
)
