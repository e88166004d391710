"""AlterConfigs (key 33), v0-2; v2+ flexible."""

from ._dsl import BOOL, INT8, INT16, INT32, STRING, Array, Field, Message, Struct

AlterableConfig = Struct(
    "AlterableConfig",
    Field("name", STRING),
    Field("value", STRING, nullable="0+"),
)

Resource = Struct(
    "AlterConfigsResource",
    Field("resource_type", INT8),
    Field("resource_name", STRING),
    Field("configs", Array(AlterableConfig)),
)

REQUEST = Message(
    "AlterConfigsRequest", 33, "0-2", "2+",
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
    "AlterConfigsResponse", 33, "0-2", "2+",
    Field("throttle_time_ms", INT32),
    Field("responses", Array(ResourceResponse)),
)
