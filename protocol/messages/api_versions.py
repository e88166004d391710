"""ApiVersions (key 18), v0-5; v3+ flexible. The response header is always v0 (KIP-511). v5 (KIP-1242)
names the cluster and node the client expects to reach."""

from ._dsl import BOOL, INT16, INT32, INT64, STRING, Array, Field, Message, Struct

REQUEST = Message(
    "ApiVersionsRequest", 18, "0-5", "3+",
    Field("client_software_name", STRING, "3+"),
    Field("client_software_version", STRING, "3+"),
    Field("cluster_id", STRING, "5+", nullable="5+", default=None),
    Field("node_id", INT32, "5+", default=-1),
)

ApiVersion = Struct(
    "ApiVersion",
    Field("api_key", INT16),
    Field("min_version", INT16),
    Field("max_version", INT16),
)

SupportedFeature = Struct(
    "SupportedFeatureKey",
    Field("name", STRING, "3+"),
    Field("min_version", INT16, "3+"),
    Field("max_version", INT16, "3+"),
)

FinalizedFeature = Struct(
    "FinalizedFeatureKey",
    Field("name", STRING, "3+"),
    Field("max_version_level", INT16, "3+"),
    Field("min_version_level", INT16, "3+"),
)

RESPONSE = Message(
    "ApiVersionsResponse", 18, "0-5", "3+",
    Field("error_code", INT16),
    Field("api_keys", Array(ApiVersion)),
    Field("throttle_time_ms", INT32, "1+"),
    Field("supported_features", Array(SupportedFeature), "3+", tag=0, tagged="3+"),
    Field("finalized_features_epoch", INT64, "3+", tag=1, tagged="3+", default=-1),
    Field("finalized_features", Array(FinalizedFeature), "3+", tag=2, tagged="3+"),
    Field("zk_migration_ready", BOOL, "3+", tag=3, tagged="3+"),
)
