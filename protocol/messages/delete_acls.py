"""DeleteAcls (key 31), v1-3 (Kafka 4 removed v0); v2 flexible."""

from ._dsl import INT8, INT16, INT32, STRING, Array, Field, Message, Struct

Filter = Struct(
    "DeleteAclsFilter",
    Field("resource_type_filter", INT8),
    Field("resource_name_filter", STRING, nullable="0+", default=None),
    Field("pattern_type_filter", INT8, "1+", default=3),
    Field("principal_filter", STRING, nullable="0+", default=None),
    Field("host_filter", STRING, nullable="0+", default=None),
    Field("operation", INT8),
    Field("permission_type", INT8),
)

REQUEST = Message(
    "DeleteAclsRequest", 31, "1-3", "2+",
    Field("filters", Array(Filter)),
)

MatchingAcl = Struct(
    "DeleteAclsMatchingAcl",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("resource_type", INT8),
    Field("resource_name", STRING),
    Field("pattern_type", INT8, "1+", default=3),
    Field("principal", STRING),
    Field("host", STRING),
    Field("operation", INT8),
    Field("permission_type", INT8),
)

FilterResult = Struct(
    "DeleteAclsFilterResult",
    Field("error_code", INT16),
    Field("error_message", STRING, nullable="0+", default=None),
    Field("matching_acls", Array(MatchingAcl)),
)

RESPONSE = Message(
    "DeleteAclsResponse", 31, "1-3", "2+",
    Field("throttle_time_ms", INT32),
    Field("filter_results", Array(FilterResult)),
)
