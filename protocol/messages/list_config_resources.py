"""ListConfigResources (key 74), v0-1; flexible. v0 was ListClientMetricsResources (KIP-714),
renamed and given resource types in v1 (KIP-1142)."""

from ._dsl import INT8, INT16, INT32, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "ListConfigResourcesRequest", 74, "0-1", "0+",
    Field("resource_types", Array(INT8), "1+"),
)

ConfigResource = Struct(
    "ConfigResource",
    Field("resource_name", STRING),
    Field("resource_type", INT8, "1+"),
)

RESPONSE = Message(
    "ListConfigResourcesResponse", 74, "0-1", "0+",
    Field("throttle_time_ms", INT32),
    Field("error_code", INT16),
    Field("config_resources", Array(ConfigResource)),
)
