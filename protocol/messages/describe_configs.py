"""DescribeConfigs (key 32), v1-4; v4+ flexible."""

from ._dsl import BOOL, INT8, INT16, INT32, STRING, Array, Field, Message, Struct

Resource = Struct(
    "DescribeConfigsResource",
    Field("resource_type", INT8),
    Field("resource_name", STRING),
    Field("configuration_keys", Array(STRING), nullable="0+"),
)

REQUEST = Message(
    "DescribeConfigsRequest", 32, "1-4", "4+",
    Field("resources", Array(Resource)),
    Field("include_synonyms", BOOL, "1+"),
    Field("include_documentation", BOOL, "3+"),
)

Synonym = Struct(
    "DescribeConfigsSynonym",
    Field("name", STRING, "1+"),
    Field("value", STRING, "1+", nullable="0+"),
    Field("source", INT8, "1+"),
)

ConfigEntry = Struct(
    "DescribeConfigsResourceResult",
    Field("name", STRING),
    Field("value", STRING, nullable="0+"),
    Field("read_only", BOOL),
    Field("config_source", INT8, "1+", default=-1),
    Field("is_sensitive", BOOL),
    Field("synonyms", Array(Synonym), "1+"),
    Field("config_type", INT8, "3+"),
    Field("documentation", STRING, "3+", nullable="0+", default=None),
)

Result = Struct(
    "DescribeConfigsResult",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+"),
    Field("resource_type", INT8),
    Field("resource_name", STRING),
    Field("configs", Array(ConfigEntry)),
)

RESPONSE = Message(
    "DescribeConfigsResponse", 32, "1-4", "4+",
    Field("throttle_time_ms", INT32),
    Field("results", Array(Result)),
)
